/// Why a node stopped so that it can rejoin with a fresh copy: its log diverged from
/// the leader's, it is behind what the leader keeps of its log (retention), or its
/// views were torn on a log that cannot make them again (``NodeStateMachine`` decides
/// which failures call for it). ``NodeLoop`` moves the data directory aside (it is
/// never deleted) and serves again, seeded from the leader.
public struct MustRejoin: Error, Sendable, Hashable, CustomStringConvertible {
    /// What about this node's log makes it rejoin.
    public enum Cause: String, Sendable {
        /// Its log took another course than the leader's.
        case diverged
        /// The leader dropped the commits it needs next (`--retain-commits`).
        case behind
        /// A crash of the machine tore its views, and its log cannot make them again.
        case torn
    }

    /// What the leader said of this node's log.
    public var reason: String
    /// Why it rejoins; also the suffix of the name its old directory is moved to.
    public var cause: Cause = .diverged

    /// A reason to rejoin.
    public init(reason: String, cause: Cause = .diverged) {
        self.reason = reason
        self.cause = cause
    }

    /// `this node's log diverged from the leader's: <reason>`, or that it is behind.
    public var description: String {
        switch cause {
        case .diverged: "this node's log diverged from the leader's: \(reason)"
        case .behind: "this node is behind the leader's retained log: \(reason)"
        case .torn: reason
        }
    }
}
