import CumulusEngine
import CumulusLog
import CumulusModel
import Foundation
import Logging
import Synchronization

/// A node of an etcd-coordinated cluster (`cumulus serve --etcd`): it takes part in the
/// election (``ClusterElection``) and turns each role it is given into what the node
/// does — leads in the epoch it won, or follows the leader etcd names, re-pointing its
/// replication when the leader changes.
///
/// **Joining.** ``join(path:open:)`` opens the data directory. A directory without a
/// log waits for the election first: it starts a log only as the first leader of a new
/// cluster; otherwise it seeds from whoever leads. **Running.** ``run()`` follows the
/// election's roles until cancelled. A leader acknowledges a write only while its lease
/// holds (``ClusterElection/Fence``). A log that diverged from the new leader's ends
/// `run()` with ``MustRejoin``; other replication failures that must stop it, with theirs.
public final class ClusterMember: Sendable {
    /// The election this node takes part in.
    public let election: ClusterElection
    /// The log once the data directory is open: its epoch and head are what the
    /// election publishes for this node.
    private let opened: OpenedLog
    /// The replication secret, for following.
    let secret: String
    /// The largest asset file it fetches from a leader (``LeaderClient/maxAssetBytes``).
    let maxAssetBytes: Int64
    /// The name it reports to leaders it follows.
    let name: String
    let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var node: NodeState?
        var electionTask: Task<Void, Never>?
        var follower: ReplicaFollower?
        /// What the node is, and what each role and failure calls for.
        var machine = NodeStateMachine(mode: .cluster)
    }

    /// A member of `keys`' cluster through the etcd behind `client`, as `configuration`
    /// describes it, proving `secret` and giving its node name to the leaders it follows,
    /// fetching asset files of at most `maxAssetBytes`.
    public init(
        client: EtcdClient, keys: ClusterKeys, configuration: LeaderElection.Configuration, secret: String,
        maxAssetBytes: Int64 = Container.defaultMaxAssetBytes, logger: Logger
    ) {
        let opened = OpenedLog()
        self.opened = opened
        election = ClusterElection(
            client: client, keys: keys, configuration: configuration, progress: { opened.progress }, logger: logger)
        self.secret = secret
        self.maxAssetBytes = maxAssetBytes
        self.name = configuration.node
        self.logger = logger
    }

    /// The open log's epoch and head, or zeros before the directory is open.
    private final class OpenedLog: Sendable {
        let store = Mutex<LogStore?>(nil)

        var progress: (epoch: UInt64, head: UInt64) {
            guard let store = store.withLock({ $0 }) else { return (0, 0) }
            return (store.epoch, store.head.sequence)
        }
    }

    /// The follower loop while this node follows.
    public var follower: ReplicaFollower? { state.withLock { $0.follower } }

    /// The cluster as this node sees it, for `/replication/status`.
    public var view: ReplicationStatus.ClusterView {
        let leader: ClusterLeader? =
            switch election.currentRole {
            case .leader(let leader), .follower(let leader): leader
            case .candidate: nil
            }
        return ReplicationStatus.ClusterView(name: election.keys.cluster, node: name, leader: leader)
    }

    /// Starts the election and opens the data directory at `path` with `open`. A
    /// directory that holds a log is opened at once, as a candidate. One that does not
    /// waits for the election's first answer: as the first leader of a new cluster it
    /// creates its log; as anyone's follower it is seeded from that leader first.
    public func join(path: String, open: @Sendable (_ refusingWrites: CumulusError?) throws -> Container) async throws
        -> NodeState
    {
        let election = self.election
        let task = Task { await election.run() }
        state.withLock { $0.electionTask = task }
        func opening() throws -> NodeState {
            let container = try open(NodeState.refusal(for: .candidate))
            let node = NodeState(container: container, role: .candidate, because: "opened \(path)")
            state.withLock {
                $0.node = node
                $0.machine.opened(epoch: container.store.epoch)
            }
            opened.store.withLock { $0 = container.store }
            return node
        }
        if FileManager.default.fileExists(atPath: path + "/data.mdb") { return try opening() }
        // Decided on the election's current role, not its stream of changes, which `run`
        // reads whole afterwards (each role again, in order: the node ends in the last).
        while true {
            try Task.checkCancellation()
            switch await election.role {
            case .candidate:
                _ = await election.nextRole(after: .candidate)
            case .leader(let leader):
                logger.notice("cluster: this node leads a new cluster (epoch \(leader.epoch)); starting its log")
                return try opening()
            case .follower(let leader):
                logger.notice("cluster: joining; seeding from \(leader)")
                if try await seed(path, from: leader) { return try opening() }
                logger.notice("cluster: the leader changed while seeding from \(leader); seeding again")
            }
        }
    }

    /// Seeds `path` from `leader`; `false` if the election named another role first (a
    /// leader lost while its snapshot was on its way), and the seeding was abandoned (a
    /// copy is prepared aside and moved into place only when whole).
    private func seed(_ path: String, from leader: ClusterLeader) async throws -> Bool {
        let (election, secret, maxAssetBytes, logger) = (self.election, self.secret, self.maxAssetBytes, self.logger)
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                let client = LeaderClient(leaderURL: leader.url, secret: secret, maxAssetBytes: maxAssetBytes)
                do {
                    let outcome = try await FollowerSeeder.prepare(
                        path: path, client: client, mode: .snapshot, reseed: false, logger: logger)
                    await client.shutdown()
                    logger.info("cluster: seeded: \(outcome)")
                    return true
                } catch {
                    await client.shutdown()
                    throw error
                }
            }
            group.addTask {
                // Ends when the role changes, or when the seeding ends first (cancelled).
                _ = await election.nextRole(after: .follower(leader))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Follows the election's roles until cancelled; throws if replication must stop.
    /// Stopping resigns: the lease is revoked, so another node can lead at once.
    public func run() async throws {
        guard let node = state.withLock({ $0.node }) else {
            throw CumulusError(.internalError, "a cluster member runs after it has joined")
        }
        let container = node.container
        container.writer.gate.install(election.fence, at: .lease)
        let (failures, failed) = AsyncStream<any Error>.makeStream()
        // However it ends, the election resigns (revoking the lease) before this returns.
        let electionTask = state.withLock { $0.electionTask }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.followRoles(node, failed) }
                group.addTask {
                    for await failure in failures { throw failure }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        } catch {
            electionTask?.cancel()
            await electionTask?.value
            throw error
        }
        electionTask?.cancel()
        await electionTask?.value
    }

    /// Turns each role into the node's, as its ``NodeStateMachine`` answers: a stream per
    /// followed leader, replaced when the leader changes; a failure that ends the node's
    /// serving goes to `failed`.
    private func followRoles(_ node: NodeState, _ failed: AsyncStream<any Error>.Continuation) async throws {
        var stream: Task<Void, Never>?
        func stopStream() async {
            guard let task = stream else { return }
            task.cancel()
            await task.value
            stream = nil
            state.withLock { $0.follower = nil }
        }
        defer { stream?.cancel() }
        // Every role since the election started, in order: the node ends in the last.
        for await role in election.roles {
            switch role {
            case .leader(let leader):
                guard case .lead(let epoch, let reason) = step({ $0.leaseGranted(leader) }) else { continue }
                await stopStream()
                try node.lead(epoch: epoch, because: reason)
                logger.notice("cluster: leading in epoch \(epoch) from head \(node.container.store.head.sequence)")
            case .follower(let leader):
                let stopReason = election.takeStopReason()
                guard case .follow(let url, let reason, let restart) = step({ $0.leaderSeen(leader, stopReason: stopReason) })
                else { continue }
                try node.follow(leaderURL: url, because: reason)
                guard restart else { continue }
                await stopStream()
                stream = startStream(from: url, into: node, failed)
            case .candidate:
                let stopReason = election.takeStopReason()
                guard case .awaitLeader(let reason) = step({ $0.leaseLost(stopReason: stopReason) }) else { continue }
                node.awaitLeader(because: reason)
            }
        }
    }

    /// Streams the log of the leader at `url` into `container` until cancelled; if it
    /// ends otherwise, the machine judges why, and what ends the node goes to `failed`.
    private func startStream(
        from url: String, into node: NodeState, _ failed: AsyncStream<any Error>.Continuation
    ) -> Task<Void, Never> {
        let client = LeaderClient(leaderURL: url, secret: secret, maxAssetBytes: maxAssetBytes)
        let follower = ReplicaFollower(container: node.container, client: client, name: name, logger: logger, node: node)
        state.withLock { $0.follower = follower }
        return Task {
            defer { Task { await client.shutdown() } }
            do {
                try await follower.run()
            } catch {
                switch self.step({ $0.failed(.init(error), streamingFrom: url) }) {
                case .keepServing(let note): self.logger.warning("cluster: replication from \(url) stopped: \(note)")
                case .rejoin(let rejoin): failed.yield(rejoin)
                case .stop: failed.yield(error)
                }
            }
        }
    }

    /// Feeds one event to the node's machine and returns its answer.
    private func step<Action: Sendable>(_ event: (inout NodeStateMachine) -> Action) -> Action {
        state.withLock { event(&$0.machine) }
    }
}
