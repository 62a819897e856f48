/// What a node does with writes (`Docs/ARCHITECTURE.md`, "Replication").
public enum NodeRole: Sendable, Hashable, CustomStringConvertible {
    /// Takes writes and appends them to its log.
    case leader
    /// Applies its leader's log and serves reads; writes are refused with `notLeader`
    /// naming the leader's URL.
    case follower(leaderURL: String)
    /// Serves a data directory as it is (a replayed point in time, a copy); writes
    /// are refused.
    case readOnly
    /// A member of an etcd-coordinated cluster that knows of no leader yet (its cluster
    /// is electing one); writes are refused with `notLeader`, reads are served.
    case candidate

    /// `leader`, `follower`, `read-only` or `candidate`.
    public var name: String {
        switch self {
        case .leader: "leader"
        case .follower: "follower"
        case .readOnly: "read-only"
        case .candidate: "candidate"
        }
    }

    /// The leader's URL, on a follower.
    public var leaderURL: String? {
        if case .follower(let url) = self { return url }
        return nil
    }

    /// The role's name, and the leader's URL on a follower.
    public var description: String {
        if let leaderURL { return "follower of \(leaderURL)" }
        return name
    }
}
