import CumulusModel

/// One item of a zone modify (`zones/modify`): create a zone, or delete one and every
/// record in it.
public enum ZoneOperation: Sendable, Hashable {
    /// Create the zone; saving one that exists returns it unchanged.
    case save(ZoneID)
    /// Delete the zone and its records.
    case delete(ZoneID)

    /// The zone it names.
    public var zoneID: ZoneID {
        switch self {
        case .save(let zoneID), .delete(let zoneID): zoneID
        }
    }
}
