import CumulusLog
import CumulusModel

/// What one logged event does to the records it touches: the one reading of events
/// as record states that history (and through it diff) and bisect share, so the
/// tools cannot disagree about what a commit did to a record.
public enum RecordTransition: Sendable {
    /// The record at the location now has this state; `changedKeys` as saved.
    case saved(RecordLocation, Record, changedKeys: [String])
    /// The record at the location no longer exists.
    case deleted(RecordLocation, cause: DeleteCause)
    /// The record at the location kept its fields and got a new change tag,
    /// because a reference from `source` came or went.
    case tagBumped(RecordLocation, changeTag: String, source: RecordID)
    /// Every record of the zone no longer exists; the event names none of them.
    case zoneDeleted(database: DatabaseID, zoneID: ZoneID)

    /// The transition `event` makes, or `nil` for an event that leaves records alone.
    public init?(_ event: Event) {
        switch event {
        case .recordSaved(let database, let record, let changedKeys):
            self = .saved(RecordLocation(database: database, recordID: record.recordID), record, changedKeys: changedKeys)
        case .recordDeleted(let database, let recordID, _, let cause):
            self = .deleted(RecordLocation(database: database, recordID: recordID), cause: cause)
        case .changeTagBumped(let database, let recordID, let changeTag, let source):
            self = .tagBumped(RecordLocation(database: database, recordID: recordID), changeTag: changeTag, source: source)
        case .zoneDeleted(let database, let zoneID):
            self = .zoneDeleted(database: database, zoneID: zoneID)
        case .zoneSaved, .subscriptionSaved, .subscriptionDeleted, .dictionaryInstalled, .schemaChanged,
            .schemaExtended, .rolesAssigned, .epochBegan, .shareSaved, .shareDeleted:
            return nil
        }
    }

    /// Whether the transition can change the record at `location`.
    public func concerns(_ location: RecordLocation) -> Bool {
        switch self {
        case .saved(let at, _, _), .deleted(let at, _), .tagBumped(let at, _, _):
            at == location
        case .zoneDeleted(let database, let zoneID):
            database == location.database && zoneID == location.recordID.zoneID
        }
    }

    /// The state of a record the transition ``concerns(_:)`` after it, given its
    /// state before: a tag bump of a record that does not exist leaves none.
    public func state(after before: Record?) -> Record? {
        switch self {
        case .saved(_, let record, _):
            return record
        case .deleted, .zoneDeleted:
            return nil
        case .tagBumped(_, let changeTag, _):
            guard var bumped = before else { return nil }
            bumped.recordChangeTag = changeTag
            return bumped
        }
    }
}
