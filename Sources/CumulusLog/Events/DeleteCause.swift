import CumulusModel

/// Why a record was deleted, so feeds, audit exports and the replay tool can say
/// why it disappeared (`Docs/DATA-MODEL.md`, "References").
public enum DeleteCause: Sendable, Hashable {
    /// The client deleted it.
    case direct
    /// It held a `deleteSelf` reference to `owner`, which was deleted.
    case cascade(owner: RecordID)
    /// Its zone was deleted.
    case zoneDeleted
}
