import CumulusModel

/// One commit's changes to one zone, as the zone feed index holds them.
public struct ZoneFeedEntry: Sendable, Hashable {
    /// What happened to one record or to the zone itself.
    public enum Change: Sendable, Hashable {
        /// The record was created or changed.
        case saved(recordName: String)
        /// The record was deleted.
        case deleted(recordName: String)
        /// The record got a new change tag because a reference to it came or went.
        case tagBumped(recordName: String)
        /// The zone was created or changed.
        case zoneSaved
        /// The zone and all its records were deleted.
        case zoneDeleted
    }

    /// The commit's position in the zone's feed.
    public var zoneSequence: UInt64
    /// The commit's global sequence.
    public var sequence: UInt64
    /// The changes, in event order.
    public var changes: [Change]

    /// A feed entry.
    public init(zoneSequence: UInt64, sequence: UInt64, changes: [Change]) {
        self.zoneSequence = zoneSequence
        self.sequence = sequence
        self.changes = changes
    }
}

/// One commit's changes to one database, as the database feed index holds them.
public struct DatabaseFeedEntry: Sendable, Hashable {
    /// What happened to a zone, or to the database as a whole.
    public enum Change: Sendable, Hashable {
        /// Records or settings of the zone changed.
        case zoneChanged(ZoneID)
        /// The zone was deleted.
        case zoneDeleted(ZoneID)
        /// Something database-wide (a subscription) changed.
        case databaseChanged
    }

    /// The commit's position in the database's feed.
    public var databaseSequence: UInt64
    /// The commit's global sequence.
    public var sequence: UInt64
    /// The changes, in zone order.
    public var changes: [Change]

    /// A feed entry.
    public init(databaseSequence: UInt64, sequence: UInt64, changes: [Change]) {
        self.databaseSequence = databaseSequence
        self.sequence = sequence
        self.changes = changes
    }
}
