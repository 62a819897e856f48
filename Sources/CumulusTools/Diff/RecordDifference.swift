import CumulusModel

/// How one record differs between two points of the log.
public struct RecordDifference: Sendable, Hashable {
    /// What happened to it, net, between the points.
    public enum Kind: Sendable, Hashable {
        /// It did not exist at the first point and does at the second.
        case created
        /// It existed at the first point and not at the second; `cause` is how its
        /// last version ended.
        case deleted(cause: RecordVersion.Kind)
        /// It exists at both, with different fields, type or change tag.
        case changed
    }

    /// The record.
    public var location: RecordLocation
    /// What happened.
    public var kind: Kind
    /// Field by field, from the first point to the second.
    public var changes: [FieldChange]
    /// The record's type (at the second point, or the first if deleted).
    public var recordType: String
    /// The change tag at each point.
    public var tagBefore: String?
    /// The change tag at the second point.
    public var tagAfter: String?
    /// The last commit in the range that touched it.
    public var lastSequence: UInt64

    /// A difference.
    public init(
        location: RecordLocation, kind: Kind, changes: [FieldChange], recordType: String, tagBefore: String?,
        tagAfter: String?, lastSequence: UInt64
    ) {
        self.location = location
        self.kind = kind
        self.changes = changes
        self.recordType = recordType
        self.tagBefore = tagBefore
        self.tagAfter = tagAfter
        self.lastSequence = lastSequence
    }
}
