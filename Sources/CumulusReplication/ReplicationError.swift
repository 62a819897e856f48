/// Why replication stopped or a replication request was refused.
public enum ReplicationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer sent bytes that are not the replication protocol.
    case protocolViolation(String)
    /// The replication secret is missing or wrong, or the node does not replicate.
    case refused(String)
    /// The two logs are not the same history: another log ID, or this node holds
    /// commits the leader does not (it followed a leader that was superseded).
    case diverged(String)
    /// The other node is in an older epoch than this one: it was superseded.
    case staleEpoch(String)
    /// A frame from the leader failed its checksum or chain check; it was not applied.
    case badFrame(String)
    /// The leader could not be reached or the connection broke; retried with backoff.
    case unreachable(String)
    /// The follower's position is before the leader's first retained commit (the
    /// leader dropped what it needs, `--retain-commits`): only a new snapshot helps.
    /// `cumulus serve` re-seeds such a follower by itself.
    case behindRetention(String)

    /// Whether reconnecting can help.
    public var isTransient: Bool {
        if case .unreachable = self { return true }
        return false
    }

    /// What happened, without the words naming the kind: what a serving node sends
    /// as its answer's reason (the status says the kind, ``httpStatus``).
    public var reason: String {
        switch self {
        case .protocolViolation(let why), .refused(let why), .diverged(let why), .staleEpoch(let why),
            .badFrame(let why), .unreachable(let why), .behindRetention(let why):
            why
        }
    }

    /// A sentence for operators.
    public var description: String {
        switch self {
        case .protocolViolation(let why): "replication protocol violation: \(why)"
        case .refused(let why): "replication refused: \(why)"
        case .diverged(let why): "the logs have diverged: \(why)"
        case .staleEpoch(let why): "stale epoch: \(why)"
        case .badFrame(let why): "refused a frame from the leader: \(why)"
        case .unreachable(let why): "leader unreachable: \(why)"
        case .behindRetention(let why): "behind the leader's retained log: \(why)"
        }
    }
}
