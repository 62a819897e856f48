/// The outcome of `audit verify`.
public struct AuditReport: Sendable, Hashable, CustomStringConvertible {
    /// Event lines checked before the first problem (all of them if none).
    public var linesChecked: Int
    /// The first bad line's number (from 1, counting the header), if any.
    public var badLine: Int?
    /// Why it is bad.
    public var problem: String?
    /// Whether the check was against the log (`false`: standalone).
    public var againstLog: Bool

    /// Whether the export passed.
    public var isValid: Bool { badLine == nil }

    /// One sentence for operators.
    public var description: String {
        if let badLine, let problem { return "audit verify: FAILED at line \(badLine): \(problem)" }
        return "audit verify: OK, \(linesChecked) lines "
            + (againstLog ? "match the log and its hash chain" : "form an unbroken chain (standalone)")
    }
}
