import CumulusModel

/// CloudKit Web Services' error codes and HTTP statuses, and how Cumulus's error codes
/// map onto them (`Docs/HTTP-API.md`, "Errors").
struct ServerErrorCode: Sendable, Hashable {
    /// The `serverErrorCode` string.
    let name: String
    /// The HTTP status of a request-level error with this code.
    let status: Int

    static let accessDenied = ServerErrorCode(name: "ACCESS_DENIED", status: 403)
    static let atomicError = ServerErrorCode(name: "ATOMIC_ERROR", status: 400)
    static let authenticationFailed = ServerErrorCode(name: "AUTHENTICATION_FAILED", status: 401)
    static let authenticationRequired = ServerErrorCode(name: "AUTHENTICATION_REQUIRED", status: 421)
    static let badRequest = ServerErrorCode(name: "BAD_REQUEST", status: 400)
    static let conflict = ServerErrorCode(name: "CONFLICT", status: 409)
    static let exists = ServerErrorCode(name: "EXISTS", status: 409)
    static let internalError = ServerErrorCode(name: "INTERNAL_ERROR", status: 500)
    static let notFound = ServerErrorCode(name: "NOT_FOUND", status: 404)
    static let quotaExceeded = ServerErrorCode(name: "QUOTA_EXCEEDED", status: 413)
    /// Rate limited: retry after the body's `retryAfter` seconds (``Throttled``).
    static let throttled = ServerErrorCode(name: "THROTTLED", status: 429)
    static let tryAgainLater = ServerErrorCode(name: "TRY_AGAIN_LATER", status: 503)
    static let validatingReferenceError = ServerErrorCode(name: "VALIDATING_REFERENCE_ERROR", status: 412)
    static let zoneNotFound = ServerErrorCode(name: "ZONE_NOT_FOUND", status: 404)
    /// Not in Apple's table; the name open-source clients expect for oversized requests.
    static let limitExceeded = ServerErrorCode(name: "LIMIT_EXCEEDED", status: 400)
    /// Not in Apple's table: a write sent to a follower or a superseded leader. The
    /// body carries `leaderURL` when the node knows it. 503, so clients that know only
    /// Apple's codes treat it as "try again later".
    static let notLeader = ServerErrorCode(name: "NOT_LEADER", status: 503)
    /// Not in Apple's table (`Docs/HTTP-API.md`, "Errors"): an expired or foreign sync token.
    static let changeTokenExpired = ServerErrorCode(name: "CHANGE_TOKEN_EXPIRED", status: 400)

    /// The wire code for a Cumulus error. `create` conflicts are `EXISTS`, other
    /// record conflicts `CONFLICT`.
    init(_ error: CumulusError, creating: Bool = false) {
        switch error.code {
        case .invalidArguments, .constraintViolation, .partialFailure: self = .badRequest
        case .unknownItem: self = .notFound
        case .zoneNotFound: self = .zoneNotFound
        case .serverRecordChanged: self = creating ? .exists : .conflict
        case .batchRequestFailed: self = .atomicError
        case .limitExceeded: self = .limitExceeded
        case .changeTokenExpired: self = .changeTokenExpired
        case .permissionFailure: self = .accessDenied
        case .notAuthenticated: self = .authenticationRequired
        case .quotaExceeded: self = .quotaExceeded
        case .serverRejectedRequest: self = .tryAgainLater
        case .notLeader: self = .notLeader
        case .referenceViolation: self = .validatingReferenceError
        case .internalError: self = .internalError
        }
    }

    init(name: String, status: Int) {
        self.name = name
        self.status = status
    }
}
