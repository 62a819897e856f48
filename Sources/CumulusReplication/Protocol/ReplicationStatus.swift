import CumulusModel
import CumulusEngine

/// A node's replication state as `GET /replication/status` reports it and
/// `cumulus status` prints it.
public struct ReplicationStatus: Sendable, Codable, Hashable {
    /// `leader`, `follower` or `read-only`.
    public var role: String
    /// The log ID in hexadecimal.
    public var logID: String
    /// The leader epoch this node is in.
    public var epoch: UInt64
    /// The last sequence it holds.
    public var head: UInt64
    /// On a leader superseded by a newer epoch: that epoch.
    public var supersededBy: UInt64?
    /// On a follower: how it follows.
    public var following: Following?
    /// On a leader: the followers that have reported their position.
    public var followers: [FollowerLag]
    /// On a member of an etcd-coordinated cluster: the cluster as this node sees it.
    public var cluster: ClusterView? = nil
    /// Each change of the node's role since its process started, oldest first
    /// (``NodeHistory``); absent from an older node's answer.
    public var history: [NodeHistory.Change]? = nil
    /// On a leader whose writes wait for followers (`--sync-replicas`): how, and how
    /// often it fell back; absent otherwise, and from an older node's answer.
    public var semiSynchronous: SemiSynchronous? = nil

    /// Semi-synchronous commit as a leader runs it (``SyncReplication``).
    public struct SemiSynchronous: Sendable, Codable, Hashable {
        /// Followers that must hold a write before it is acknowledged.
        public var replicas: Int
        /// How long a write waits for them.
        public var timeoutMilliseconds: Int64
        /// What happens past the timeout (`fail`, `async`).
        public var fallback: String
        /// Writes acknowledged without their replicas since the node started.
        public var fallbacks: Int
    }

    /// A cluster member's view of its cluster.
    public struct ClusterView: Sendable, Codable, Hashable {
        /// The cluster's name.
        public var name: String
        /// This node's name in it.
        public var node: String
        /// The node holding the leader key (and its lease), as this node last saw it;
        /// `nil` while it knows of none.
        public var leader: ClusterLeader?

        /// A view.
        public init(name: String, node: String, leader: ClusterLeader?) {
            self.name = name
            self.node = node
            self.leader = leader
        }
    }

    /// A follower's view of its leader.
    public struct Following: Sendable, Codable, Hashable {
        /// The leader's URL.
        public var leaderURL: String
        /// `seeding`, `connecting`, `streaming`, `retrying` or `stopped`.
        public var state: String
        /// Why it is retrying or stopped.
        public var problem: String?
        /// The leader's head as last heard.
        public var leaderHead: UInt64
        /// Commits the leader holds that this node does not (as last heard).
        public var lagCommits: UInt64
        /// How old this node's state is compared with the leader's, in milliseconds
        /// (0 when caught up).
        public var lagMilliseconds: Int64
        /// Milliseconds since the leader was last heard from (`nil`: never).
        public var sinceContactMilliseconds: Int64?
    }

    /// A leader's view of one follower.
    public struct FollowerLag: Sendable, Codable, Hashable {
        /// The name the follower gave.
        public var name: String
        /// The last sequence it reported applied.
        public var applied: UInt64
        /// Commits behind this leader's head.
        public var lagCommits: UInt64
        /// Milliseconds since the oldest commit it lacks was made (0 when caught up).
        public var lagMilliseconds: Int64
        /// Milliseconds since it last reported.
        public var sinceReportMilliseconds: Int64
        /// Replication streams it has open now.
        public var openStreams: Int
    }

    /// The lag figures in Prometheus's text format, to append to `/metrics`.
    public func prometheusText() -> String {
        var lines: [String] = []
        func gauge(_ name: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            lines.append("# HELP cumulus_\(name) \(help)")
            lines.append("# TYPE cumulus_\(name) gauge")
            for sample in samples { lines.append("cumulus_\(name)\(sample.labels) \(sample.value)") }
        }
        gauge("epoch", "The leader epoch this node is in", [("", String(epoch))])
        gauge("replication_is_leader", "1 on a leader that takes writes, else 0",
              [("", role == "leader" && supersededBy == nil ? "1" : "0")])
        if let following {
            gauge("replication_leader_head", "The leader's head as last heard", [("", String(following.leaderHead))])
            gauge("replication_lag_commits", "Commits the leader holds that this follower does not", [("", String(following.lagCommits))])
            gauge("replication_lag_seconds", "How far this follower's state is behind the leader's",
                  [("", String(Double(following.lagMilliseconds) / 1000))])
            gauge("replication_streaming", "1 while the follower streams from its leader",
                  [("", following.state == "streaming" ? "1" : "0")])
        }
        if !followers.isEmpty {
            func label(_ name: String) -> String {
                "{follower=\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    .replacingOccurrences(of: "\n", with: "\\n") + "\"}"
            }
            gauge("follower_lag_commits", "Commits a follower lacks", followers.map { (label($0.name), String($0.lagCommits)) })
            gauge("follower_lag_seconds", "How far a follower is behind",
                  followers.map { (label($0.name), String(Double($0.lagMilliseconds) / 1000)) })
            gauge("follower_streams", "Replication streams a follower has open", followers.map { (label($0.name), String($0.openStreams)) })
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ReplicationStatus {
    /// The status of a node that neither leads followers nor follows.
    public static func of(_ node: NodeState) -> ReplicationStatus {
        of(node.container, role: node.role.name)
    }

    /// The status of `container` served in `role`, with no followers and no leader.
    public static func of(_ container: Container, role: String) -> ReplicationStatus {
        let store = container.store
        return ReplicationStatus(
            role: role, logID: Hex.encode(store.logID), epoch: store.epoch, head: store.head.sequence,
            supersededBy: container.supersededBy, following: nil, followers: [])
    }
}
