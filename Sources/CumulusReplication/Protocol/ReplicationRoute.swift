import Foundation

/// The replication protocol's endpoints, their query parameters, and what each HTTP
/// status means: the one file both sides read, the serving node's
/// `ReplicationEndpoints` and the follower's ``LeaderClient`` (`Docs/HTTP-API.md`,
/// "Replication").
///
/// Every endpoint but ``handshake`` needs the session a handshake opened
/// (``ReplicationHandshake``); ``leaderOnly`` endpoints are answered by a leader alone.
public enum ReplicationRoute: String, Sendable, CaseIterable {
    /// `POST ?nonce=`: opens a session; the only endpoint open without one.
    case handshake
    /// `GET [?follower=&epoch=]`: the node's identity and head (``ReplicationHello``).
    case hello
    /// `GET`: the node's replication status (``ReplicationStatus``).
    case status
    /// `GET ?checksum=`: an asset file's bytes.
    case asset
    /// `GET`: the leader's credentials and server secret (``ReplicatedConfiguration``).
    case configuration
    /// `GET ?follower=&logID=&epoch=&after=&hash=`: the frame stream.
    case stream
    /// `GET`: a snapshot of the leader's environment.
    case snapshot
    /// `POST ?follower=&applied=`: a follower's applied sequence.
    case ack

    /// Where every endpoint's path starts.
    public static let prefix = "/replication/"

    /// A query parameter's name.
    public enum Parameter: String, Sendable {
        case nonce, follower, epoch, checksum, logID, after, hash, applied
    }

    /// The HTTP method.
    public var method: String { self == .handshake || self == .ack ? "POST" : "GET" }

    /// Whether only a leader answers it.
    public var leaderOnly: Bool { self == .configuration || self == .stream || self == .snapshot || self == .ack }

    /// The endpoint `method` and `path` name, `nil` for none.
    public init?(method: String, path: String) {
        guard path.hasPrefix(Self.prefix), let route = Self(rawValue: String(path.dropFirst(Self.prefix.count))),
            route.method == method
        else { return nil }
        self = route
    }

    /// The request target: the path, then `query` in order, each value percent-encoded.
    public func target(_ query: [(Parameter, String)] = []) -> String {
        guard !query.isEmpty else { return Self.prefix + rawValue }
        let pairs = query.map { "\($0.0.rawValue)=\(Self.escape($0.1))" }
        return Self.prefix + rawValue + "?" + pairs.joined(separator: "&")
    }

    /// `text` with every byte but ASCII letters, digits and `-._~` percent-encoded
    /// (Foundation's `.alphanumerics` would let other scripts' letters through raw).
    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    // MARK: - Statuses

    /// No session by that ID (never opened, or forgotten by a restart or idling):
    /// the caller shakes hands again and retries once.
    public static let unknownSessionStatus = 401
    /// The session's proof is wrong: the caller does not hold the secret.
    public static let wrongProofStatus = 403
    /// No such endpoint, or no such asset on the node asked.
    public static let notFoundStatus = 404
    /// The node could not do what was asked (a frame it could not take, a failure of
    /// its own).
    public static let failedStatus = 500
    /// The node cannot serve this now (not leading, too busy): the caller retries.
    public static let unavailableStatus = 503
}

extension ReplicationError {
    /// The status a serving node answers this error with. A leader's refusal
    /// (``refused(_:)``: not leading now, too busy) is 503, which the follower reads as
    /// ``unreachable(_:)`` and retries: by then another node may lead, or this one may
    /// have room. A frame the node could not take is its own fault, 500.
    public var httpStatus: Int {
        switch self {
        case .protocolViolation: 400
        case .diverged: 409
        case .behindRetention: 410
        case .staleEpoch: 412
        case .badFrame: ReplicationRoute.failedStatus
        case .refused, .unreachable: ReplicationRoute.unavailableStatus
        }
    }

    /// The error a follower takes an answer of `status` with `reason` for (`node`: the
    /// node asked, for the sentence): the inverse of ``httpStatus``, where a session's
    /// refusal (401 once its retry failed, 403) is ``refused(_:)`` for good.
    public init(status: Int, reason: String, node: String) {
        switch status {
        case ReplicationRoute.unknownSessionStatus, ReplicationRoute.wrongProofStatus: self = .refused(reason)
        case 400: self = .protocolViolation(reason)
        case 409: self = .diverged(reason)
        case 410: self = .behindRetention(reason)
        case 412: self = .staleEpoch(reason)
        case ReplicationRoute.unavailableStatus: self = .unreachable("\(node) cannot serve replication now: \(reason)")
        default: self = .unreachable("HTTP \(status): \(reason)")
        }
    }
}
