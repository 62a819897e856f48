import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
import Logging
import Synchronization

/// The leader's side of replication (`Docs/ARCHITECTURE.md`, "Replication"): it says which log it holds, streams
/// its stored frames to followers from the position each holds, hands out
/// snapshots, and keeps track of how far each follower is.
///
/// Every request must belong to a session in which both sides proved the
/// replication secret without sending it (``ReplicationHandshake``; checked by the
/// server's endpoints). The stream and the snapshot carry the server secret and
/// credential hashes, so use a private network or TLS in front of it
/// (Docs/OPERATIONS.md).
public final class ReplicationLeader: Sendable {
    /// The node served, and its data directory.
    public let node: NodeState
    public var container: Container { node.container }
    /// How often an idle stream sends a heartbeat.
    public let heartbeatInterval: Duration
    let followers = FollowerRegistry()
    /// Semi-synchronous commit, once ``requireReplicas(_:)`` installed it.
    private let semiSynchronous = Mutex<SyncReplication?>(nil)
    let logger: Logger
    /// Where snapshots are written while they are streamed.
    let snapshotDirectory: String
    /// Writes a snapshot into a file descriptor, in order: LMDB's compacting copy.
    let snapshotCopy: @Sendable (Int32) throws(StorageError) -> Void
    /// Whether a snapshot is being written or sent: one at a time, so followers
    /// seeding at once cannot fill the leader's disk with copies.
    let copying = Mutex(false)

    /// Frames per stream message, at most.
    static let framesPerMessage = 1024
    /// Bytes of frames per stream message, past the first frame.
    static let bytesPerMessage = 4 << 20

    /// Serves replication of `node` (the replication secret is checked by the HTTP
    /// endpoints in front of it); it streams only while the node leads.
    public convenience init(node: NodeState, heartbeatInterval: Duration = .seconds(1), logger: Logger) {
        self.init(node: node, heartbeatInterval: heartbeatInterval, logger: logger, snapshotCopy: nil)
    }

    /// Serves replication of `container`, which leads (a node of its own: tests and
    /// benchmarks).
    public convenience init(container: Container, heartbeatInterval: Duration = .seconds(1), logger: Logger) {
        self.init(
            node: NodeState(container: container, role: .leader, because: "serves replication"),
            heartbeatInterval: heartbeatInterval, logger: logger, snapshotCopy: nil)
    }

    /// ``init(node:heartbeatInterval:logger:)`` with the snapshot's copy replaced
    /// (tests: a copy that fails part-way must break the response off).
    init(
        node: NodeState, heartbeatInterval: Duration = .seconds(1), logger: Logger,
        snapshotCopy: (@Sendable (Int32) throws(StorageError) -> Void)?
    ) {
        self.node = node
        let container = node.container
        self.heartbeatInterval = heartbeatInterval
        self.logger = logger
        if let snapshotCopy {
            self.snapshotCopy = snapshotCopy
        } else {
            let store = container.store
            self.snapshotCopy = { descriptor throws(StorageError) in try SnapshotLayout.write(store, to: descriptor) }
        }
        snapshotDirectory = container.path + "/snapshots"
        // Snapshots left by a crash are of no use to anyone.
        try? FileManager.default.removeItem(atPath: snapshotDirectory)
    }

    /// This node's identity and head.
    public func hello() -> ReplicationHello { .of(node) }

    /// Notes the epoch a peer says it is in (a follower's hello): a newer one than
    /// this node's means this node was superseded — it fences itself and says so.
    public func observe(epoch: UInt64, from peer: String) {
        let store = container.store
        guard epoch > store.epoch, container.supersede(by: epoch) else { return }
        logger.critical(
            "\(peer) is in epoch \(epoch), this node in \(store.epoch): this node was superseded and now refuses writes; make it a follower of the current leader")
    }

    /// Opens a stream for a follower that holds `identity`'s log up to `after`,
    /// whose chain hash there is `hash`, as the session's machine
    /// (``FollowerSessionStateMachine``) decides. Refuses a follower of another log,
    /// one that holds commits this log does not (`diverged`), one behind what this
    /// log keeps, and one in a newer epoch — which means this node was superseded: it
    /// fences itself and says so.
    public func openStream(follower: String, identity: LogStore.Identity, after: UInt64, hash: [UInt8]) throws
        -> ReplicationStream
    {
        let store = container.store
        var session = FollowerSessionStateMachine()
        let view = FollowerSessionStateMachine.Leader(
            logID: store.logID, epoch: store.epoch, leads: node.leads, role: "\(node.role)", head: store.head.sequence,
            firstRetained: store.firstRetained)
        switch session.openRequested(identity: identity, after: after, hash: hash, leader: view) {
        case .refuse(let error):
            throw error
        case .superseded(let epoch, let error):
            observe(epoch: epoch, from: "follower \(follower)")
            throw error
        case .readChainHash(let position):
            let read: FollowerSessionStateMachine.ChainHash
            do {
                read = .found(try store.chainHash(at: position))
            } catch LogError.truncated(_, let first) {
                read = .truncated(first: first)
            }
            let position: UInt64
            switch session.chainHashRead(read) {
            case .refuse(let error): throw error
            case .register(let at): position = at
            }
            // Registered only once its history is known to be this leader's
            // (semi-synchronous commit counts registered followers). (A retention
            // batch already under way may still take what it needs: then the stream's
            // read fails, the follower reconnects and is told it is behind. Safe,
            // merely slower.)
            followers.streamOpened(follower, at: position)
            switch session.registered(firstRetained: store.firstRetained) {
            case .unregister(let error):
                followers.streamClosed(follower)
                throw error
            case .stream(let next):
                logger.info("follower \(follower) streaming from \(next) (leader head \(view.head))")
                return ReplicationStream(leader: self, follower: follower, session: session)
            }
        }
    }

    /// The last commit retention may drop without taking one a follower still needs:
    /// the lowest position among followers with an open stream or that reported within
    /// `grace` (a follower needs the commits after its position, and the chain hash at
    /// it, which the log keeps for its last dropped commit). A follower already behind
    /// the retained log holds nothing back: it must be seeded from a snapshot anyway.
    /// `nil`: no follower holds anything back.
    public func retentionFloor(grace: Duration) -> UInt64? {
        let now = ContinuousClock.now
        let base = container.store.retainedBase.sequence
        return followers.snapshot()
            .filter { $0.entry.applied >= base && ($0.entry.openStreams > 0 || now - $0.entry.reportedAt < grace) }
            .map { $0.entry.applied }
            .min()
    }

    /// Records a follower's report of the last sequence it applied.
    public func report(follower: String, applied: UInt64) {
        followers.report(follower, applied: applied)
    }

    /// Makes the node's writes semi-synchronous (``SyncReplication``): each is
    /// acknowledged only once `policy.replicas` followers streaming from this node hold
    /// it. Returns the mechanism, for its counters.
    @discardableResult
    public func requireReplicas(_ policy: SyncReplication.Policy) -> SyncReplication {
        let sync = SyncReplication(policy: policy, registry: followers, logger: logger)
        followers.observe { [weak sync] in sync?.positionsChanged() }
        container.writer.gate.install(sync, at: .replicas)
        semiSynchronous.withLock { $0 = sync }
        return sync
    }

    /// A consistent, compacted copy of both environments — log, views,
    /// credentials and secret (``SnapshotLayout``) — sent while it is written to a scratch file (see
    /// ``SnapshotFile``). The file is deleted when the stream ends.
    public func snapshot() async throws -> SnapshotFile {
        let busy = copying.withLock { copying -> Bool in
            defer { copying = true }
            return copying
        }
        guard !busy else {
            throw ReplicationError.unreachable("another follower's snapshot is being written or sent; retry shortly")
        }
        // Held until both the copy and its stream are done: released earlier, a second
        // could be written beside a first still being sent, and so on, each a full copy
        // on disk.
        let release: @Sendable () -> Void = { [self] in copying.withLock { $0 = false } }
        let directory = snapshotDirectory + "/" + UUID.random().uuidString
        do {
            let file = try SnapshotFile(into: directory, released: release, copy: snapshotCopy)
            logger.info("snapshot being written and sent to a follower: \(directory)")
            return file
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            release()
            throw error
        }
    }

    /// This node's replication status: identity, head, and each follower's lag.
    public func status() -> ReplicationStatus {
        let store = container.store
        let head = store.head.sequence
        let now = ContinuousClock.now
        var timestamps: [UInt64: Timestamp] = [:]
        let wallNow = Timestamp.now()
        let lags = followers.snapshot().map { name, entry -> ReplicationStatus.FollowerLag in
            let behind = head > entry.applied ? head - entry.applied : 0
            var lagMilliseconds: Int64 = 0
            if behind > 0 {
                let oldest = entry.applied + 1
                if timestamps[oldest] == nil { timestamps[oldest] = try? store.timestamp(of: oldest) }
                if let made = timestamps[oldest] {
                    lagMilliseconds = max(0, wallNow.millisecondsSince1970 - made.millisecondsSince1970)
                }
            }
            return ReplicationStatus.FollowerLag(
                name: name, applied: entry.applied, lagCommits: behind, lagMilliseconds: lagMilliseconds,
                sinceReportMilliseconds: (now - entry.reportedAt).milliseconds, openStreams: entry.openStreams)
        }
        return ReplicationStatus(
            role: node.role.name, logID: Hex.encode(store.logID), epoch: store.epoch, head: head,
            supersededBy: container.supersededBy, following: nil, followers: lags,
            semiSynchronous: semiSynchronous.withLock { $0 }.map { sync in
                ReplicationStatus.SemiSynchronous(
                    replicas: sync.policy.replicas, timeoutMilliseconds: sync.policy.timeout.milliseconds,
                    fallback: sync.policy.fallback.rawValue, fallbacks: sync.fallbacks)
            })
    }
}
