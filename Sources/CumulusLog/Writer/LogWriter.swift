import CumulusModel
import CumulusStorage
import Dispatch
import Foundation
import Synchronization

/// The single writer of a log, with group commit (`Docs/ARCHITECTURE.md`, "A write, end to end").
///
/// Callers submit work from any task; one dedicated thread drains the queue into a
/// single write transaction of the views environment — bounded by
/// ``Options/maxBatchCount`` and ``Options/maxBatchBytes`` — whose frames go to the log
/// environment in one transaction of their own (``LogStore/appendWrite(also:catchUp:_:)``),
/// so one fsync makes many commits durable. A caller's `await` returns only after
/// both have committed: the log's, which with the default durable environment means
/// fsynced, and then the views', so a read after the answer sees the write.
///
/// **Why a thread.** An LMDB write transaction must begin and commit on the same OS
/// thread and must never wait on an `await`; a dedicated thread running synchronous
/// transactions guarantees both and keeps fsync off Swift's cooperative pool.
///
/// **Isolation.** Each submission's `plan` runs against the transaction's view (it
/// sees earlier submissions of the same group) and may throw: that fails only that
/// submission. A failure while appending or applying views aborts the group; the
/// writer then retries each submission alone, so only the culprit fails.
public final class LogWriter: Sendable {
    /// Group commit and dictionary settings.
    public struct Options: Sendable {
        /// Most commits in one transaction.
        public var maxBatchCount = 1024
        /// Most uncompressed commit bytes in one transaction (the last commit may cross it).
        public var maxBatchBytes = 16 << 20
        /// When to train and install compression dictionaries.
        public var dictionary = DictionaryPolicy()
        /// Called on the writer thread after each committed group (metrics); must be quick.
        public var observer: (@Sendable (GroupReport) -> Void)?

        /// Default options.
        public init() {}
    }

    /// Called for every appended commit inside the same write transaction, with the
    /// request's ``CommitRequest/workAhead`` (`nil` for a commit caught up from the
    /// log): where views are kept in step with the log. A throw aborts the group.
    public typealias Applier = @Sendable (Commit, (any Sendable)?, LMDBWriteTransaction) throws -> Void

    /// What a plan sees: the group's transaction (read-only to the plan), the
    /// sequence its commit will get if it returns one, and the commit time.
    public struct PlanContext {
        /// The group's write transaction, seen read-only: it includes the commits
        /// earlier submissions of the same group appended.
        public let transaction: LMDBReadTransaction
        /// The global sequence the plan's commit will have.
        public let sequence: UInt64
        /// The time the commit will carry (one per group).
        public let now: Timestamp

        /// A context: the writer's for each submission, or a read transaction's for a
        /// plan only looked at, never appended (what a delete would take).
        public init(transaction: LMDBReadTransaction, sequence: UInt64, now: Timestamp) {
            self.transaction = transaction
            self.sequence = sequence
            self.now = now
        }
    }

    /// Plans one submission against the transaction's current state: returns the
    /// commit to append (or `nil` for none) and a value for the caller.
    public typealias Plan<T> = @Sendable (PlanContext) throws -> (CommitRequest?, T)

    /// The log written to.
    public let store: LogStore
    /// The options in force.
    public let options: Options
    /// What stands between a write and its answer (a refusal, semi-synchronous commit,
    /// a cluster's lease): the node that owns the writer fills it, the writer asks it.
    public let gate = AcknowledgementGate()

    private let applier: Applier?
    private let queue = Mutex(Queue())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let trainer: DictionaryTrainer

    /// What one committed group did, for metrics.
    public struct GroupReport: Sendable {
        /// Commits appended.
        public var commits: Int
        /// Uncompressed commit bytes appended.
        public var bytes: Int
        /// Time spent planning, appending and applying views.
        public var append: Duration
        /// Time spent committing: the log's transaction, which includes the fsync, and
        /// then the views'.
        public var commit: Duration
        /// CPU time the writer's thread used for the group, from taking it off the queue
        /// to its transaction committed (planning, appending, applying, LMDB's own work;
        /// not the time it waited for the fsync): what the one serial thread pays per
        /// commit, the figure a write's throughput is bounded by.
        public var cpu: Duration

        /// A report.
        public init(commits: Int, bytes: Int, append: Duration, commit: Duration, cpu: Duration = .zero) {
            self.commits = commits
            self.bytes = bytes
            self.append = append
            self.commit = commit
            self.cpu = cpu
        }
    }

    /// Counters since the writer started.
    public struct Statistics: Sendable, Hashable {
        /// Write transactions committed.
        public var groups = 0
        /// Commits appended.
        public var commits = 0
        /// CPU time the writer's thread spent on committed groups (``GroupReport/cpu``).
        public var cpu: Duration = .zero
    }

    /// Counters since the writer started: `commits / groups` is the group-commit factor.
    public var statistics: Statistics { stats.withLock { $0 } }
    private let stats = Mutex(Statistics())

    struct Queue: Sendable {
        var items: [Submission] = []
        var closed = false
    }

    struct Submission: Sendable {
        let plan: @Sendable (PlanContext) throws -> (CommitRequest?, any Sendable)
        let complete: @Sendable (Result<(Commit?, any Sendable), any Error>) -> Void
        /// A leader's frames to append as they are (a follower), instead of a plan.
        var frames: FrameBatch?
    }

    /// A batch of a leader's frames and where to report the result.
    struct FrameBatch: Sendable {
        let frames: [[UInt8]]
        /// The frames decoded ahead, or empty (``FrameDecoder``).
        let decoded: [DecodedFrame?]
        /// Applies each commit (by its index in `frames`) instead of the writer's
        /// applier, or `nil`.
        let apply: (@Sendable (Int, Commit, LMDBWriteTransaction) throws -> Void)?
        let complete: @Sendable (Result<[Commit], any Error>) -> Void
    }

    /// Starts the writer thread for `store`; `applier` keeps views in step.
    public init(store: LogStore, options: Options = Options(), applier: Applier? = nil) {
        self.store = store
        self.options = options
        self.applier = applier
        self.trainer = DictionaryTrainer(store: store, policy: options.dictionary)
        let thread = Thread { [self] in self.run() }
        thread.name = "cumulus-log-writer"
        thread.start()
    }

    deinit {
        queue.withLock { $0.closed = true }
        wakeUp.signal()
    }

    /// Appends `request` as one commit and returns it once durable.
    @discardableResult
    public func append(_ request: CommitRequest) async throws -> Commit {
        let (commit, _) = try await submit { _ in (request, ()) }
        guard let commit else { throw LogError.storage("empty commit request") }
        return commit
    }

    /// Runs `plan` on the writer thread inside the group's transaction and appends
    /// the commit it returns; returns that commit (once durable) and the plan's value.
    /// A request with no events appends nothing.
    public func submit<T: Sendable>(_ plan: @escaping Plan<T>) async throws -> (Commit?, T) {
        if let refusal = await gate.admit() { throw refusal }
        let (commit, value) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Commit?, any Sendable), any Error>) in
            let submission = Submission(
                plan: { context in
                    let (request, value) = try plan(context)
                    return (request, value as any Sendable)
                },
                complete: { continuation.resume(with: $0) })
            let refusal = queue.withLock { queue -> (any Error)? in
                guard !queue.closed else { return LogError.closed }
                // Asked again as it is queued: the node may have stopped leading meanwhile.
                if let refusal = gate.refusal { return refusal }
                queue.items.append(submission)
                return nil
            }
            if let refusal { continuation.resume(throwing: refusal) } else { wakeUp.signal() }
        }
        guard let typed = value as? T else { throw LogError.storage("writer returned a value of the wrong type") }
        return (commit, typed)
    }

    /// Appends a leader's frames byte for byte and applies each to the views, all in
    /// one transaction whose commit also stores the new head — so a crash leaves the
    /// log and views at the batch's start or its end, never between. A frame that is
    /// damaged or does not continue the chain fails the whole batch, which then
    /// leaves nothing behind. Returns the commits once durable.
    public func replicate(_ frames: [[UInt8]]) async throws -> [Commit] {
        try await enqueue(frames, decoded: [], apply: nil)
    }

    /// ``replicate(_:)`` for frames decoded ahead (`decoded`: one per frame), each
    /// commit applied by `apply` (with its index in `frames`) instead of this writer's
    /// applier: for a follower that derived more of the batch while the one before it
    /// was written. The same checks refuse the same frames.
    public func replicate(
        _ frames: [[UInt8]], decoded: [DecodedFrame?],
        applying apply: @escaping @Sendable (Int, Commit, LMDBWriteTransaction) throws -> Void
    ) async throws -> [Commit] {
        precondition(decoded.count == frames.count, "one decoding per frame")
        return try await enqueue(frames, decoded: decoded, apply: apply)
    }

    private func enqueue(
        _ frames: [[UInt8]], decoded: [DecodedFrame?],
        apply: (@Sendable (Int, Commit, LMDBWriteTransaction) throws -> Void)?
    ) async throws -> [Commit] {
        guard !frames.isEmpty else { return [] }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Commit], any Error>) in
            let batch = FrameBatch(
                frames: frames, decoded: decoded, apply: apply, complete: { continuation.resume(with: $0) })
            let submission = Submission(plan: { _ in (nil, ()) }, complete: { _ in }, frames: batch)
            let accepted = queue.withLock { queue -> Bool in
                guard !queue.closed else { return false }
                queue.items.append(submission)
                return true
            }
            if accepted { wakeUp.signal() } else { continuation.resume(throwing: LogError.closed) }
        }
    }

    /// Stops accepting work, finishes what is queued, and waits for the thread to end.
    public func close() {
        let first = queue.withLock { queue -> Bool in
            defer { queue.closed = true }
            return !queue.closed
        }
        wakeUp.signal()
        if first { stopped.wait() }
    }

    // MARK: - The writer thread

    private func run() {
        while true {
            wakeUp.wait()
            while true {
                let (batch, closed) = queue.withLock { queue -> ([Submission], Bool) in
                    // A frame batch goes alone; plans group up to the next one.
                    var count = min(queue.items.count, options.maxBatchCount)
                    if let firstFrames = queue.items.prefix(count).firstIndex(where: { $0.frames != nil }) {
                        count = firstFrames == 0 ? 1 : firstFrames
                    }
                    let batch = Array(queue.items.prefix(count))
                    queue.items.removeFirst(count)
                    return (batch, queue.closed)
                }
                if batch.isEmpty {
                    if closed {
                        stopped.signal()
                        return
                    }
                    break
                }
                if batch.count == 1, let frames = batch[0].frames {
                    frames.complete(Result { try appendFrames(frames) })
                    continue
                }
                let leftover = process(batch)
                if !leftover.isEmpty { queue.withLock { $0.items.insert(contentsOf: leftover, at: 0) } }
            }
        }
    }

    /// Trains a dictionary off the writer thread and appends its installation.
    ///
    /// At `.utility`, not `.background`: on a busy 2-core machine background work was
    /// starved, and the first dictionary arrived at commit 2,632 instead of soon after
    /// 1,000, so ~1,600 more frames were stored at twice the size. Training takes
    /// well under a second and happens once per 100,000 commits.
    private func startTraining() {
        let trainer = self.trainer
        Task.detached(priority: .utility) { [weak self] in
            var installed = false
            if let request = try? trainer.train(), let self {
                installed = (try? await self.append(request)) != nil
            }
            trainer.finish(installed: installed)
        }
    }

    /// A follower's batch: the leader's frames appended and applied in one transaction.
    private func appendFrames(_ batch: FrameBatch) throws -> [Commit] {
        let clock = ContinuousClock()
        let started = clock.now
        let cpuStarted = ThreadCPUClock.now()
        let applier = applier
        let appended = try store.appendFrames(
            batch.frames, decoded: batch.decoded, catchUp: { try applier?($0, nil, $1) }
        ) { index, commit, txn in
            if let apply = batch.apply { try apply(index, commit, txn) } else { try applier?(commit, nil, txn) }
        }
        publish(appended.outcome, GroupReport(
            commits: appended.commits.count, bytes: appended.bytes, append: appended.body,
            commit: clock.now - started - appended.body, cpu: ThreadCPUClock.now() - cpuStarted))
        return appended.commits
    }

    /// After a group's transaction committed: wakes readers, reports, counts.
    private func publish(_ outcome: AppendSession.Outcome, _ report: GroupReport) {
        store.didCommit(outcome)
        options.observer?(report)
        stats.withLock {
            $0.groups += 1
            $0.commits += report.commits
            $0.cpu += report.cpu
        }
    }

    /// Commits as much of `batch` as fits one group; returns what did not fit.
    private func process(_ batch: [Submission]) -> [Submission] {
        let now = Timestamp.now()
        let clock = ContinuousClock()
        let started = clock.now
        let cpuStarted = ThreadCPUClock.now()
        var bodyEnded = started
        var results: [Result<(Commit?, any Sendable), any Error>?] = []
        var taken = 0
        var appended: [(commit: Commit, bytes: [UInt8])] = []
        do {
            let applier = applier
            let (_, outcome) = try store.appendWrite(catchUp: { try applier?($0, nil, $1) }) { txn -> ((), AppendSession.Outcome) in
                // The body may run again after map growth: start from scratch.
                results = Array(repeating: nil, count: batch.count)
                appended = []
                taken = 0
                var session = try store.beginAppend(in: txn)
                for (index, submission) in batch.enumerated() {
                    if index > 0 && session.appendedBytes >= options.maxBatchBytes { break }
                    taken = index + 1
                    let planned: (CommitRequest?, any Sendable)
                    do {
                        let context = PlanContext(transaction: txn, sequence: session.head.sequence + 1, now: now)
                        planned = try submission.plan(context)
                    } catch {
                        results[index] = .failure(error)
                        continue
                    }
                    guard let request = planned.0, !request.events.isEmpty else {
                        results[index] = .success((nil, planned.1))
                        continue
                    }
                    let entry = try session.append(request, now: now, in: txn)
                    try applier?(entry.commit, request.workAhead, txn)
                    appended.append(entry)
                    results[index] = .success((entry.commit, planned.1))
                }
                let outcome = try session.finish(in: txn)
                bodyEnded = clock.now
                return ((), outcome)
            }
            publish(outcome, GroupReport(
                commits: appended.count, bytes: appended.reduce(0) { $0 + $1.bytes.count },
                append: bodyEnded - started, commit: clock.now - bodyEnded, cpu: ThreadCPUClock.now() - cpuStarted))
            if trainer.observe(appended) { startTraining() }
            let (held, outcomes) = (Array(batch[..<taken]), results)
            let acknowledge: @Sendable ((any Error)?) -> Void = { refusal in
                for (index, submission) in held.enumerated() {
                    var result = outcomes[index] ?? .failure(LogError.storage("submission lost"))
                    if let refusal, case .success((.some, _)) = result { result = .failure(refusal) }
                    submission.complete(result)
                }
            }
            if let last = appended.last?.commit.sequence {
                gate.release(through: last, acknowledge)
            } else {
                acknowledge(nil)
            }
            return Array(batch[taken...])
        } catch {
            if batch.count == 1 {
                batch[0].complete(.failure(error))
                return []
            }
            // Something failed after planning: retry one by one so only the culprit fails.
            for submission in batch { _ = process([submission]) }
            return []
        }
    }
}
