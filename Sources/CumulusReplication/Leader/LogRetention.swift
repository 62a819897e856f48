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

        /// Keep the newest `keep` commits (1 if `keep` is 0).
        public init(keep: UInt64) { self.keep = max(keep, 1) }
    }

    /// The node whose log is kept short.
    public let container: Container
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
    public init(container: Container, leader: ReplicationLeader?, policy: Policy, logger: Logger) {
        self.container = container
        self.leader = leader
        self.policy = policy
        self.logger = logger
    }

    /// The last commit that may be dropped now, or `nil` if nothing may.
    public func target() -> UInt64? {
        let store = container.store
        let head = store.head.sequence
        let now = ContinuousClock.now
        guard container.role == .leader, container.supersededBy == nil else {
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
    /// Each batch runs on a Dispatch thread: its fsync must not hold one of the
    /// cooperative pool's few threads.
    @discardableResult
    public func dropDue() async throws -> Int {
        let store = container.store
        var total = 0
        while !Task.isCancelled, let target = target() {
            let limit = policy.batchSize
            let dropped = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                DispatchQueue.global(qos: .utility).async {
                    continuation.resume(with: Result { try store.dropCommits(through: target, limit: limit) })
                }
            }
            guard dropped > 0 else { break }
            total += dropped
        }
        if total > 0 { logger.info("retention: dropped \(total) commits; the log now starts at \(store.firstRetained)") }
        return total
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
