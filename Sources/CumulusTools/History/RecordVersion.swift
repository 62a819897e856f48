import CumulusLog
import CumulusModel

/// One step in a record's life, from one event of one commit.
public struct RecordVersion: Sendable, Hashable {
    /// What the step was.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// The first save (or the first after a delete).
        case created
        /// A later save.
        case updated
        /// A reference from `source` came or went, so the change tag moved (`Docs/DATA-MODEL.md`, "References").
        case tagBumped(source: String)
        /// Deleted by the client, or by a cascade from an owner.
        case deleted(DeleteCause)
        /// Its zone was deleted.
        case zoneDeleted

        /// `created`, `deleted (cascade from list-1)`, …
        public var description: String {
            switch self {
            case .created: "created"
            case .updated: "updated"
            case .tagBumped(let source): "change tag bumped (reference from \(source))"
            case .deleted(.direct): "deleted (direct)"
            case .deleted(.cascade(let owner)): "deleted (cascade from \(owner.recordName))"
            case .deleted(.zoneDeleted), .zoneDeleted: "deleted (zone deleted)"
            }
        }
    }

    /// The commit.
    public var sequence: UInt64
    /// The event's index in the commit.
    public var eventIndex: Int
    /// The commit time.
    public var time: Timestamp
    /// Who made the commit.
    public var user: String
    /// The commit's request ID.
    public var requestID: String
    /// What happened.
    public var kind: Kind
    /// Field by field, from the previous version to this one.
    public var changes: [FieldChange]
    /// The keys the save said it changed.
    public var changedKeys: [String]
    /// The change tag before and after.
    public var tagBefore: String?
    /// The change tag after (`nil` once deleted).
    public var tagAfter: String?
    /// The record as it stood after this step (`nil` once deleted).
    public var record: Record?

    /// A version.
    public init(
        sequence: UInt64, eventIndex: Int, time: Timestamp, user: String, requestID: String, kind: Kind,
        changes: [FieldChange], changedKeys: [String], tagBefore: String?, tagAfter: String?, record: Record?
    ) {
        self.sequence = sequence
        self.eventIndex = eventIndex
        self.time = time
        self.user = user
        self.requestID = requestID
        self.kind = kind
        self.changes = changes
        self.changedKeys = changedKeys
        self.tagBefore = tagBefore
        self.tagAfter = tagAfter
        self.record = record
    }
}
