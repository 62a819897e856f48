import CumulusEngine
import CumulusModel
import Synchronization

/// What this node is now — a leader, a follower of a URL, a read-only copy, or a
/// cluster member waiting for its election — and the one place that changes it.
///
/// Each change tells the container what the engine needs to know (lead in an epoch,
/// or refuse writes saying where they go; the directory marked a follower's) and is
/// recorded in the node's history. The engine never learns more than that: the roles
/// are the node's (``NodeStateMachine`` decides them, its drivers call these
/// methods). Readers — the HTTP API, the replication endpoints, retention — ask it.
public final class NodeState: Sendable {
    /// The data directory served.
    public let container: Container
    private let current: Mutex<NodeRole>

    /// `container` in `role`, recorded in its history with `reason`. A role that takes
    /// no writes refuses them from now on; a leader leaves the container as opened (a
    /// follower's directory or a superseded log still refuses).
    public init(container: Container, role: NodeRole, because reason: String) {
        self.container = container
        current = Mutex(role)
        become(role, because: reason)
    }

    /// The refusal a write gets from a node in `role`: `nil` for a leader.
    public static func refusal(for role: NodeRole) -> CumulusError? {
        switch role {
        case .leader: nil
        case .follower(let leaderURL):
            CumulusError(.notLeader, "this node is a follower; send writes to the leader at \(leaderURL)")
        case .readOnly: CumulusError(.notLeader, "this node serves a read-only data directory; it takes no writes")
        case .candidate:
            CumulusError(.notLeader, "this node's cluster is electing a leader; retry shortly, or send writes to the new leader")
        }
    }

    /// The role now.
    public var role: NodeRole { current.withLock { $0 } }

    /// Whether this node leads and was not superseded: it takes writes and serves
    /// followers.
    public var leads: Bool { role == .leader && container.supersededBy == nil }

    /// The role's name, or `superseded` for a leader that learned of a newer epoch:
    /// what the node says of itself to peers and operators.
    public var reportedRole: String { container.supersededBy == nil ? role.name : "superseded" }

    /// Leads in `epoch`, the epoch this node won (``Container/lead(epoch:)``).
    public func lead(epoch: UInt64, because reason: String) throws {
        try container.lead(epoch: epoch)
        current.withLock { $0 = .leader }
        container.history.record(NodeRole.leader.name, epoch: epoch, reason: reason)
    }

    /// Follows the leader at `leaderURL`: writes are refused naming it, and the
    /// directory is marked a follower's.
    public func follow(leaderURL: String, because reason: String) throws {
        let role = NodeRole.follower(leaderURL: leaderURL)
        become(role, because: reason)
        try container.markFollower()
    }

    /// Takes no writes while the cluster elects a leader: this node stopped leading
    /// (its lease lapsed, or another won), and knows of no leader yet.
    public func awaitLeader(because reason: String) {
        become(.candidate, because: reason)
    }

    private func become(_ role: NodeRole, because reason: String) {
        if let refusal = Self.refusal(for: role) { container.refuseWrites(refusal) }
        current.withLock { $0 = role }
        container.history.record(role.name, epoch: container.store.epoch, leaderURL: role.leaderURL, reason: reason)
    }
}
