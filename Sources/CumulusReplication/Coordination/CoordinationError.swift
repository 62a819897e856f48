/// Why a request to the coordinator (etcd) failed.
public enum CoordinationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No endpoint answered, or the connection broke: retried with backoff.
    case unreachable(String)
    /// etcd answered with an error (a bad request, a lease it does not know, a
    /// compacted revision).
    case refused(String)
    /// etcd's answer was not what its v3 JSON gateway sends.
    case protocolViolation(String)

    /// Whether trying again can help.
    public var isTransient: Bool {
        if case .unreachable = self { return true }
        return false
    }

    /// A sentence for operators.
    public var description: String {
        switch self {
        case .unreachable(let why): "etcd unreachable: \(why)"
        case .refused(let why): "etcd refused the request: \(why)"
        case .protocolViolation(let why): "unexpected answer from etcd: \(why)"
        }
    }
}
