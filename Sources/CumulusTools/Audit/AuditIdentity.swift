/// What identifies an audit line: its commit and its event's position in it.
public struct AuditIdentity: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The commit.
    public var sequence: UInt64
    /// The event's index in it.
    public var event: Int

    /// An identity.
    public init(sequence: UInt64, event: Int) {
        self.sequence = sequence
        self.event = event
    }

    /// Log order.
    public static func < (lhs: AuditIdentity, rhs: AuditIdentity) -> Bool {
        (lhs.sequence, lhs.event) < (rhs.sequence, rhs.event)
    }

    /// `sequence 12 event 0`.
    public var description: String { "sequence \(sequence) event \(event)" }
}
