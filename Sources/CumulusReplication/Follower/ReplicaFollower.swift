import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusViews
import Foundation
import Logging
import Synchronization

/// A follower's replication loop (SPEC §11): connects to the leader, checks that
/// both hold the same history, and appends and applies the leader's frames as they
/// arrive — each received batch in one LMDB transaction that also moves the log
/// head, so a crash can never leave it believing it holds what it does not.
///
/// Connection failures are retried with exponential backoff. Anything that could
/// fork history — a damaged or unchained frame, another log, a leader in an older
/// epoch, a leader whose history does not contain this node's — stops the loop
/// with a ``ReplicationError`` naming it; nothing from the offending message is
/// applied.
public final class ReplicaFollower: Sendable {
    /// The node the leader's log is applied to.
    public let container: Container
    /// The connection to the leader.
    public let client: LeaderClient
    /// The name this follower reports to the leader.
    public let name: String
    let logger: Logger
    let state = Mutex(State())

    struct State: Sendable {
        var phase = "connecting"
        var problem: String?
        var leaderHead: UInt64 = 0
        var lastApplied: Timestamp?
        var lastContact: ContinuousClock.Instant?
        /// When catch-up progress was last logged, and the head then.
        var progressLogged: (at: ContinuousClock.Instant, head: UInt64)?
        /// Wakes the session's reporter when a run was applied.
        var applied: AsyncStream<Void>.Continuation?
    }

    /// Shortest and longest wait between reconnection attempts.
    static let backoff: (first: Duration, longest: Duration) = (.milliseconds(100), .seconds(5))

    /// A follower applying the log of `client`'s leader to `container`.
    public init(container: Container, client: LeaderClient, name: String, logger: Logger) {
        self.container = container
        self.client = client
        self.name = name
        self.logger = logger
    }

    /// Follows the leader until the task is cancelled (returns) or replication must
    /// stop (throws the reason).
    public func run() async throws {
        var delay = Self.backoff.first
        while !Task.isCancelled {
            do {
                try await session { delay = Self.backoff.first }
            } catch let error as ReplicationError where error.isTransient {
                if Task.isCancelled { return }
                setPhase("retrying", problem: error.description)
                logger.warning("replication: \(error); retrying in \(delay)")
                try? await Task.sleep(for: delay + .milliseconds(Int.random(in: 0...Int(delay.milliseconds / 4 + 1))))
                delay = min(delay * 2, Self.backoff.longest)
            } catch let error as ReplicationError {
                if Task.isCancelled { return }
                if case .behindRetention = error {
                    // Not a fault: `serve` re-seeds this node from a snapshot.
                    setPhase("re-seeding", problem: error.description)
                    logger.warning("replication: \(error)")
                    throw error
                }
                setPhase("stopped", problem: "\(error)")
                logger.critical("replication stopped: \(error)")
                throw error
            } catch {
                if Task.isCancelled { return }
                setPhase("stopped", problem: "\(error)")
                logger.critical("replication stopped: \(error)")
                throw error
            }
        }
    }

    /// One connection: hello, epoch and identity checks, then the stream.
    func session(onProgress: () -> Void) async throws {
        let started = ContinuousClock.now
        do {
            try await connectAndStream()
        } catch {
            // A session that heard from the leader resets the backoff.
            if state.withLock({ $0.lastContact.map { $0 > started } ?? false }) { onProgress() }
            throw error
        }
    }

    private func connectAndStream() async throws {
        setPhase("connecting", problem: nil)
        let store = container.store
        let hello = try await client.hello(follower: name, epoch: store.epoch)
        state.withLock { $0.leaderHead = max($0.leaderHead, hello.head) }
        guard let identity = hello.identity else {
            throw ReplicationError.protocolViolation("the leader's hello has a malformed log ID or epoch")
        }
        guard identity.logID == store.logID else {
            throw ReplicationError.diverged(
                "this node holds log \(Hex.encode(store.logID)) but the leader log \(hello.logID); start it with --reseed to discard this copy")
        }
        guard identity.epoch >= store.epoch else {
            throw ReplicationError.staleEpoch(
                "the leader at \(client.leaderURL) is in epoch \(identity.epoch), older than this node's \(store.epoch): it was superseded; follow the current leader")
        }
        guard hello.role == "leader" else {
            throw ReplicationError.unreachable("\(client.leaderURL) is not a leader (\(hello.role))")
        }
        let head = store.head
        // The reporter says what this node holds as soon as a run is applied (a leader
        // in semi-synchronous mode waits for it to acknowledge), and every second
        // regardless (the leader shows how long ago each follower reported). Wake-ups
        // that come while a report is on its way fold into one.
        let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.applied = wake }
        let ticker = Task {
            while !Task.isCancelled {
                wake.yield()
                try? await Task.sleep(for: .seconds(1))
            }
        }
        let reporter = Task { [client, name] in
            var reported: (applied: UInt64, at: ContinuousClock.Instant)?
            for await _ in wakeUps {
                let applied = store.head.sequence
                let due = reported.map { $0.applied != applied || ContinuousClock.now - $0.at >= .seconds(1) } ?? true
                if due, (try? await client.report(follower: name, applied: applied)) != nil {
                    reported = (applied, .now)
                }
            }
        }
        defer {
            state.withLock { $0.applied = nil }
            wake.finish()
            ticker.cancel()
            reporter.cancel()
        }
        setPhase("streaming", problem: nil)
        // Two tasks: the reader decodes what arrives, the applier takes all frames
        // received so far (``FrameInbox``) and applies them in runs of at most
        // ``preparedRun``, each in one transaction. While the writer applies one run,
        // the next run of the same batch is decoded and derived (``PreparedFrames``);
        // a batch's last run is applied before the applier waits for more, so a
        // follower keeping up applies each message at once.
        let inbox = FrameInbox()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [container] in
                var decoder = FrameDecoder(store: store)
                while let batch = await inbox.take(), !Task.isCancelled {
                    do {
                        let runs = stride(from: 0, to: batch.frames.count, by: Self.preparedRun).map {
                            Array(batch.frames[$0..<min(batch.frames.count, $0 + Self.preparedRun)])
                        }
                        guard let first = runs.first else { continue }
                        var current: PreparedFrames
                        (current, decoder) = try await Self.prepare(first, decoder, container)
                        for index in runs.indices {
                            guard index + 1 < runs.count else {
                                try await self.apply(current, leaderHead: batch.leaderHead)
                                break
                            }
                            let (run, state) = (runs[index + 1], decoder)
                            async let next = Self.prepare(run, state, container)
                            try await self.apply(current, leaderHead: batch.leaderHead)
                            (current, decoder) = try await next
                        }
                    } catch {
                        inbox.fail()
                        throw error
                    }
                }
            }
            group.addTask { [client, name] in
                defer { inbox.close() }
                var decoder = ReplicationMessageDecoder()
                try await client.stream(
                    follower: name, identity: store.identity, after: head.sequence, hash: head.hash,
                    // The leader accepted this node's position: only now is its
                    // (newer) epoch this node's too.
                    opened: { try store.adoptEpoch(identity.epoch) }
                ) { chunk in
                    decoder.append(chunk)
                    while let message = try decoder.next() {
                        if case .frames(let frames, let leaderHead) = message {
                            // The applier failed: stop reading; its error ends the session.
                            guard await inbox.put(frames, leaderHead: leaderHead) else { throw CancellationError() }
                        } else {
                            try await self.apply(message)
                        }
                    }
                }
            }
            // The first failure ends the session; the group cancels the other task.
            for try await _ in group {}
        }
        throw ReplicationError.unreachable("the leader closed the stream")
    }

    /// Most frames applied in one transaction while streaming: a run this long is
    /// decoded and derived ahead in a few tens of milliseconds, and keeps what is
    /// held in memory for it (decoded records, derived keys) to a few megabytes.
    static let preparedRun = 2_000

    /// `frames` decoded and derived, continuing `decoder`, on a Dispatch thread: it
    /// is tens of milliseconds of CPU, which would hold one of the cooperative pool's
    /// few threads (the ones that serve this node's reads).
    static func prepare(_ frames: [[UInt8]], _ decoder: FrameDecoder, _ container: Container) async throws
        -> (PreparedFrames, FrameDecoder)
    {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    var decoder = decoder
                    let prepared = try PreparedFrames(
                        frames, decoder: &decoder, views: container.views, environment: container.store.environment)
                    return (prepared, decoder)
                })
            }
        }
    }

    /// Applies a run of the leader's frames, decoded and derived ahead, in one
    /// transaction, and notes the progress.
    func apply(_ prepared: PreparedFrames, leaderHead: UInt64) async throws {
        let views = container.views
        let commits: [Commit]
        do {
            commits = try await container.writer.replicate(prepared.frames, decoded: prepared.decoded) {
                index, commit, txn in try prepared.apply(index, commit, to: views, in: txn)
            }
        } catch LogError.closed {
            throw CancellationError()
        } catch let error as LogError {
            throw ReplicationError.badFrame("\(error); nothing from this batch was applied")
        }
        state.withLock { $0.applied }?.yield()
        let head = container.store.head.sequence
        let progress = state.withLock { state -> String? in
            state.leaderHead = max(state.leaderHead, leaderHead)
            state.lastApplied = commits.last?.timestamp ?? state.lastApplied
            state.lastContact = .now
            // Catch-up is long work: say how it goes every 5 s while behind.
            let now = ContinuousClock.now
            guard let last = state.progressLogged else {
                state.progressLogged = (now, head)
                return nil
            }
            guard now - last.at >= .seconds(5), state.leaderHead > head else { return nil }
            state.progressLogged = (now, head)
            let rate = Double(head - min(head, last.head)) / Double((now - last.at).milliseconds) * 1000
            return "catching up: \(head) of \(state.leaderHead) commits (\(Int(rate)) commits/s)"
        }
        if let progress { logger.info("\(progress)") }
    }

    /// Applies one message from the leader.
    func apply(_ message: ReplicationMessage) async throws {
        switch message {
        case .frames(let frames, let leaderHead):
            // The stream hands frames to the inbox; frames applied as one message take
            // the same path.
            let (prepared, _) = try await Self.prepare(frames, FrameDecoder(store: container.store), container)
            try await apply(prepared, leaderHead: leaderHead)
        case .heartbeat(let leaderHead, _):
            noteContact(leaderHead: leaderHead)
        case .configuration(let configuration):
            guard let secret = configuration.serverSecret, container.hasServerSecret(secret) else {
                throw ReplicationError.diverged(
                    "the leader's server secret is not this node's, so tokens would not carry over; start it with --reseed")
            }
            let environment = container.store.environment
            let handles = try ReplicatedConfiguration.openTables(in: environment)
            try environment.write { txn in try configuration.write(to: handles, in: txn) }
            noteContact(leaderHead: 0)
        case .failure(let reason):
            // The one reason a leader ends a stream today is being superseded.
            throw ReplicationError.staleEpoch("the leader stopped the stream: \(reason)")
        }
    }

    /// This follower's status: its head, the leader's as last heard, and the lag.
    public func status() -> ReplicationStatus {
        let store = container.store
        let head = store.head.sequence
        let now = Timestamp.now()
        let following = state.withLock { state -> ReplicationStatus.Following in
            let leaderHead = max(state.leaderHead, head)
            let behind = leaderHead - head
            let lag = behind == 0 ? 0 : max(0, now.millisecondsSince1970 - (state.lastApplied?.millisecondsSince1970 ?? now.millisecondsSince1970))
            return ReplicationStatus.Following(
                leaderURL: client.leaderURL, state: state.phase, problem: state.problem, leaderHead: leaderHead,
                lagCommits: behind, lagMilliseconds: lag,
                sinceContactMilliseconds: state.lastContact.map { (ContinuousClock.now - $0).milliseconds })
        }
        return ReplicationStatus(
            role: container.role.name, logID: Hex.encode(store.logID), epoch: store.epoch, head: head,
            supersededBy: nil, following: following, followers: [])
    }

    private func setPhase(_ phase: String, problem: String?) {
        state.withLock {
            $0.phase = phase
            $0.problem = problem
        }
    }

    private func noteContact(leaderHead: UInt64) {
        state.withLock {
            $0.leaderHead = max($0.leaderHead, leaderHead)
            $0.lastContact = .now
        }
    }
}
