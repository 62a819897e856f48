import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusViews
import Foundation
import Logging
import Synchronization

/// A follower's replication loop (`Docs/ARCHITECTURE.md`, "Replication"): connects to the leader, checks that
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
    let state: Mutex<State>
    /// The node this follower runs on, whose role its status reports (a cluster
    /// member's stream may outlive its role); `nil`: a follower of a fixed URL.
    let node: NodeState?

    struct State: Sendable {
        /// The conversation with the leader: what to do next, and the phase shown.
        var machine: FollowerStateMachine
        var leaderHead: UInt64 = 0
        var lastApplied: Timestamp?
        var lastContact: ContinuousClock.Instant?
        /// When catch-up progress was last logged, and the head then.
        var progressLogged: (at: ContinuousClock.Instant, head: UInt64)?
        /// Wakes the session's reporter when a run was applied.
        var applied: AsyncStream<Void>.Continuation?
    }

    /// A follower applying the log of `client`'s leader to `container`.
    public init(container: Container, client: LeaderClient, name: String, logger: Logger, node: NodeState? = nil) {
        self.node = node
        self.container = container
        self.client = client
        self.name = name
        self.logger = logger
        state = Mutex(State(machine: FollowerStateMachine(leaderURL: client.leaderURL)))
    }

    /// Hands `event` to the state machine; returns what to do.
    private func step(_ event: FollowerStateMachine.Event) -> FollowerStateMachine.Action {
        state.withLock { $0.machine.receive(event) }
    }

    /// Follows the leader until the task is cancelled (returns) or replication must
    /// stop (throws the reason): drives ``FollowerStateMachine`` with what each session
    /// and wait brings.
    public func run() async throws {
        var action = step(.start)
        while !Task.isCancelled {
            switch action {
            case .sayHello:
                do {
                    try await connectAndStream()
                    action = step(.sessionEnded(.unreachable("the leader closed the stream")))
                } catch let error as ReplicationError {
                    if Task.isCancelled { return }
                    action = step(.sessionEnded(error))
                } catch {
                    if Task.isCancelled { return }
                    _ = step(.faulted("\(error)"))
                    logger.critical("replication stopped: \(error)")
                    throw error
                }
            case .wait(let delay):
                logger.warning("replication: \(state.withLock { $0.machine.problem } ?? "?"); retrying in \(delay)")
                // Jitter, so followers of one leader do not all reconnect at once.
                try? await Task.sleep(for: delay + .milliseconds(Int.random(in: 0...Int(delay.milliseconds / 4 + 1))))
                action = step(.waitEnded)
            case .reseed(let error):
                // Not a fault: `serve` re-seeds this node from a snapshot.
                logger.warning("replication: \(error)")
                throw error
            case .stop(let error):
                logger.critical("replication stopped: \(error)")
                throw error
            case .openStream, .adoptEpoch, .apply, .noteContact, .storeConfiguration, .endSession, .none:
                // Actions of a session, never of the loop: start over rather than spin.
                action = step(.start)
            }
        }
    }

    /// One connection: the hello and the machine's checks of it, then the stream.
    /// Returns when the leader closes the stream; throws why it ended otherwise.
    private func connectAndStream() async throws {
        let store = container.store
        let hello = try await client.hello(follower: name, epoch: store.epoch)
        state.withLock { $0.leaderHead = max($0.leaderHead, hello.head) }
        let head = store.head
        let after: UInt64, hash: [UInt8]
        switch step(.helloReceived(hello, local: store.identity, head: head)) {
        case .openStream(let position, let positionHash): (after, hash) = (position, positionHash)
        case .endSession(let error): throw error
        case let other: throw ReplicationError.protocolViolation("unexpected step after the hello: \(other)")
        }
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
                    follower: name, identity: store.identity, after: after, hash: hash,
                    opened: { try self.perform(self.step(.streamOpened)) }
                ) { chunk in
                    decoder.append(chunk)
                    while let message = try decoder.next() {
                        let action = self.step(.messageReceived(message))
                        if case .apply(let frames, let leaderHead) = action {
                            // The applier failed: stop reading; its error ends the session.
                            guard await inbox.put(frames, leaderHead: leaderHead) else { throw CancellationError() }
                        } else {
                            try self.perform(action)
                        }
                    }
                }
            }
            // The first failure ends the session; the group cancels the other task.
            for try await _ in group {}
        }
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
        try await fetchAssets(of: prepared.decoded.map { $0?.commit })
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

    /// Fetches from the leader, checks and stores every asset file the records
    /// `commits` save refer to and this node lacks, before they are applied: a
    /// follower never serves a record whose asset it cannot serve.
    func fetchAssets(of commits: [Commit?]) async throws {
        var wanted = Set<AssetChecksum>()
        for case let commit? in commits {
            for case .recordSaved(_, let record, _) in commit.events {
                record.forEachFieldAsset { asset in
                    if let checksum = AssetChecksum(hex: asset.fileChecksum) { wanted.insert(checksum) }
                }
            }
        }
        // A file already here restarts its grace, so a collection round cannot delete it
        // before the commit that refers to it again is applied.
        for checksum in wanted.sorted() where try !container.assets.retain(checksum) {
            try await Self.fetchAsset(checksum, from: client, into: container.assets)
        }
    }

    /// Fetches one asset file from `client`'s leader into `store`, durably.
    static func fetchAsset(_ checksum: AssetChecksum, from client: LeaderClient, into store: AssetStore) async throws {
        let bytes = try await client.asset(checksum)
        do {
            try store.install(bytes, as: checksum)
        } catch {
            throw ReplicationError.unreachable("storing asset \(checksum) fetched from \(client.leaderURL): \(error)")
        }
    }

    /// Does what the machine asked of a session's stream, other than applying frames
    /// (the stream's reader hands those to the applier): adopting the leader's epoch,
    /// noting it is alive, storing its configuration once its server secret is found
    /// to be this node's, or ending the session.
    private func perform(_ action: FollowerStateMachine.Action) throws {
        switch action {
        case .adoptEpoch(let epoch):
            try container.store.adoptEpoch(epoch)
        case .noteContact(let leaderHead):
            noteContact(leaderHead: leaderHead)
        case .storeConfiguration(let configuration):
            guard let secret = configuration.serverSecret, container.hasServerSecret(secret) else {
                throw ReplicationError.diverged(
                    "the leader's server secret is not this node's, so tokens would not carry over; start it with --reseed")
            }
            let environment = container.store.logEnvironment
            let handles = try ReplicatedConfiguration.openTables(in: environment)
            try environment.write { txn in try configuration.write(to: handles, in: txn) }
            noteContact(leaderHead: 0)
        case .endSession(let error):
            throw error
        case .none:
            break
        case .sayHello, .openStream, .apply, .wait, .reseed, .stop:
            throw ReplicationError.protocolViolation("the follower was asked to \(action) in the middle of a stream")
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
                leaderURL: client.leaderURL, state: state.machine.phase, problem: state.machine.problem, leaderHead: leaderHead,
                lagCommits: behind, lagMilliseconds: lag,
                sinceContactMilliseconds: state.lastContact.map { (ContinuousClock.now - $0).milliseconds })
        }
        return ReplicationStatus(
            role: node?.role.name ?? "follower", logID: Hex.encode(store.logID), epoch: store.epoch, head: head,
            supersededBy: nil, following: following, followers: [])
    }

    private func noteContact(leaderHead: UInt64) {
        state.withLock {
            $0.leaderHead = max($0.leaderHead, leaderHead)
            $0.lastContact = .now
        }
    }
}
