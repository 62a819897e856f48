/// The one error type Cumulus reports at its API edge.
///
/// Every failure carries a ``Code`` (`Docs/DATA-MODEL.md`, "Errors"), a
/// message a person can act on, and — where the failure concerns one item — the
/// record ID and field it is about. A `serverRecordChanged` error also carries the
/// server's current record so the client can merge and retry.
///
/// Thrown with plain `throws` (not typed throws) at most call sites: Swift 6.3.1
/// miscompiles partial `catch` clauses over typed-thrown structs.
public struct CumulusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error codes (`Docs/DATA-MODEL.md`, "Errors"); raw values are the names used
    /// on the wire of the Swift API and in logs.
    public enum Code: String, Sendable, CaseIterable, Codable {
        case invalidArguments
        case unknownItem
        case zoneNotFound
        case serverRecordChanged
        case batchRequestFailed
        case partialFailure
        case limitExceeded
        case changeTokenExpired
        case permissionFailure
        case notAuthenticated
        case quotaExceeded
        case serverRejectedRequest
        case constraintViolation
        case referenceViolation
        case notLeader
        case internalError
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence saying what went wrong and, where possible, what to do.
    public var message: String
    /// The record the failure concerns, if it concerns one.
    public var recordID: RecordID?
    /// The field (key) the failure concerns, if it concerns one.
    public var field: String?
    /// For `serverRecordChanged`: the record as the server holds it now.
    public var serverRecord: Record?

    /// Creates an error; `recordID` and `field` locate the offending item.
    public init(
        _ code: Code,
        _ message: String,
        recordID: RecordID? = nil,
        field: String? = nil,
        serverRecord: Record? = nil
    ) {
        self.code = code
        self.message = message
        self.recordID = recordID
        self.field = field
        self.serverRecord = serverRecord
    }

    /// `code: message [record …, field …]`, for logs and command-line output.
    public var description: String {
        var text = "\(code.rawValue): \(message)"
        var context: [String] = []
        if let recordID { context.append("record \(recordID)") }
        if let field { context.append("field '\(field)'") }
        if !context.isEmpty { text += " [" + context.joined(separator: ", ") + "]" }
        return text
    }

    /// The same error, located at `recordID` (kept if already set).
    public func at(_ recordID: RecordID?, field: String? = nil) -> CumulusError {
        var copy = self
        if copy.recordID == nil { copy.recordID = recordID }
        if copy.field == nil { copy.field = field }
        return copy
    }
}
