import CumulusModel
import CumulusStorage

/// Feed reads inside a caller's transaction, so a change fetch sees the feed and the
/// views in one snapshot.
extension LogStore {
    /// The zone's feed after position `after`, at most `limit` entries, as `txn` sees it.
    public func zoneFeed(
        _ database: DatabaseID, _ zone: ZoneID, after: UInt64, limit: Int, in txn: LMDBReadTransaction
    ) throws -> [ZoneFeedEntry] {
        try feeds.zoneEntries(database, zone, after: after, limit: limit, in: txn)
    }

    /// The position commit `sequence` has in the zone's feed, or `nil` if it did not
    /// touch the zone; from the feed alone, so it answers for commits retention dropped.
    public func zonePosition(
        ofCommit sequence: UInt64, _ database: DatabaseID, _ zone: ZoneID, in txn: LMDBReadTransaction
    ) throws -> UInt64? {
        try feeds.zonePosition(ofCommit: sequence, database, zone, in: txn)
    }

    /// The database's feed after position `after`, at most `limit` entries, as `txn` sees it.
    public func databaseFeed(_ database: DatabaseID, after: UInt64, limit: Int, in txn: LMDBReadTransaction) throws
        -> [DatabaseFeedEntry]
    {
        try feeds.databaseEntries(database, after: after, limit: limit, in: txn)
    }
}
