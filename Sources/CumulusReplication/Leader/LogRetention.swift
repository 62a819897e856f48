import CumulusEngine
import CumulusLog
import Dispatch
import Logging
import Synchronization

/// Keeps a leader's log to its newest commits (`cumulus serve --retain-commits N`,
/// Docs/OPERATIONS.md "Retention"): in the background, it drops frames older than
/// the newest ``Policy/keep`` commits — but never one a follower still needs (see
/// ``ReplicationLeader/retentionFloor(grace:)``) — in small batches, each its own
/// short write transaction (``LogStore/dropCommits(through:limit:)`` says why that is
/// safe beside the writer). A follower that falls behind what is kept is refused
/// with ``ReplicationError/behindRetention(_:)`` and re-seeds from a snapshot.
///
/// Only a leader drops: a follower's log stays a copy of what it was given, and a
/// cluster member drops only while it leads.
public final class LogRetention: Sendable {
    /// What to keep and how to drop.
    public struct Policy: Sendable, Hashable {
        /// The newest commits always kept (at least 1: the head stays).
        public var keep: UInt64
        /// How long a follower that stopped reporting still holds back what it needs:
        /// a follower restarting within it resumes streaming instead of re-seeding.
        public var followerGrace: Duration = .seconds(600)
        /// Frames dropped per write transaction: small enough that the writer, which
        /// waits for it, hardly notices.
        public var batchSize = 1_000
        /// How often it looks whether there is something to drop.
        public var interval: Duration = .seconds(1)
        /// Commits retention may want to drop past the last views snapshot before it
        /// takes another (``LogStore/takeViewsSnapshot()``). Nothing after the last
        /// snapshot is ever dropped, so the log holds at most about `keep` plus this
        /// many commits; each snapshot costs a compact copy of the views.
        public var snapshotEvery: UInt64

        /// Keep the newest `keep` commits (1 if `keep` is 0), with a views snapshot
        /// every `keep / 2` commits.
        public init(keep: UInt64) {
            self.keep = max(keep, 1)
            snapshotEvery = max(keep / 2, 1)
        }
    }

    /// The node whose log is kept short.
    public let container: Container
    /// The node: retention drops commits only while it leads.
    public let node: NodeState
    /// Its followers' positions (`nil`: a node that serves no followers).
    let leader: ReplicationLeader?
    /// The policy in force.
    public let policy: Policy
    let logger: Logger
    /// When this node was first seen leading in its current term (`nil`: not leading).
    /// A leader knows its followers only from their streams and reports, which it keeps
    /// in memory: just started, or just elected, it has heard from none yet. It drops
    /// nothing until they have had ``Policy/followerGrace`` to reconnect, or a follower
    /// down for a minute would find what it needs gone because the leader restarted.
    private let leadingSince = Mutex<ContinuousClock.Instant?>(nil)

    /// Retention of `container`'s log under `policy`, holding back what `leader`'s
    /// followers need.
    public init(node: NodeState, leader: ReplicationLeader?, policy: Policy, logger: Logger) {
        self.node = node
        self.container = node.container
        self.leader = leader
        self.policy = policy
        self.logger = logger
    }

    /// The last commit that may be dropped now, or `nil` if nothing may.
    public func target() -> UInt64? {
        let store = container.store
        let head = store.head.sequence
        let now = ContinuousClock.now
        guard node.leads else {
            leadingSince.withLock { $0 = nil }
            return nil
        }
        let since = leadingSince.withLock { since in
            if since == nil { since = now }
            return since ?? now
        }
        guard leader == nil || now - since >= policy.followerGrace, head > policy.keep else { return nil }
        var last = head - policy.keep
        if let floor = leader?.retentionFloor(grace: policy.followerGrace) { last = min(last, floor) }
        return last > store.retainedBase.sequence ? last : nil
    }

    /// Drops what ``target()`` allows, batch by batch; returns how many commits went.
    ///
    /// Never past the last views snapshot (``ViewsSnapshot``): a node whose views a
    /// crash of the machine tore restarts them from it and needs every commit after
    /// it. So when the target has gone ``Policy/snapshotEvery`` commits past the last
    /// snapshot (or there is none), it takes one first. Snapshots and batches run on a
    /// Dispatch thread: their fsyncs must not hold one of the cooperative pool's few
    /// threads.
    @discardableResult
    public func dropDue() async throws -> Int {
        let store = container.store
        var total = 0
        while !Task.isCancelled, let wanted = target() {
            var snapshot = try store.viewsSnapshot()?.sequence
            if snapshot.map({ wanted > $0 && wanted - $0 >= policy.snapshotEvery }) ?? true {
                let taken = try await Self.offPool { try store.takeViewsSnapshot() }
                logger.info("retention: took a views snapshot at commit \(taken.sequence)")
                snapshot = taken.sequence
            }
            let through = min(wanted, snapshot ?? 0)
            guard through > store.retainedBase.sequence else { break }
            let limit = policy.batchSize
            let dropped = try await Self.offPool { try store.dropCommits(through: through, limit: limit) }
            guard dropped > 0 else { break }
            total += dropped
        }
        if total > 0 { logger.info("retention: dropped \(total) commits; the log now starts at \(store.firstRetained)") }
        return total
    }

    /// Runs `work` on a Dispatch thread and returns its result.
    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            DispatchQueue.global(qos: .utility).async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Drops what is due every ``Policy/interval`` until the task is cancelled. A
    /// failure is logged and tried again later: the node keeps serving.
    public func run() async {
        logger.info("retention: keeping the newest \(policy.keep) commits (and what followers need)")
        while !Task.isCancelled {
            do {
                try await dropDue()
            } catch {
                logger.error("retention: dropping old commits failed: \(error); trying again")
            }
            try? await Task.sleep(for: policy.interval)
        }
    }
}
