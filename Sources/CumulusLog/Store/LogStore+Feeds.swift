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

    /// The database's feed after position `after`, at most `limit` entries, as `txn` sees it.
    public func databaseFeed(_ database: DatabaseID, after: UInt64, limit: Int, in txn: LMDBReadTransaction) throws
        -> [DatabaseFeedEntry]
    {
        try feeds.databaseEntries(database, after: after, limit: limit, in: txn)
    }
}
