import CumulusModel

extension Database {
    /// The records that refer to `recordID` (references stay within a zone), with the
    /// action each reference carries, of those `actor` may read; sorted by name.
    public func referrers(of recordID: RecordID, as actor: String?) throws
        -> [(recordID: RecordID, action: Reference.Action)]
    {
        try AccessPolicy.checkRead(id, actor: actor)
        let zoneID = storedZoneID(recordID.zoneID)
        // Through the shared database, records live in their owner's private one.
        let database = id.scope == .shared ? ownerDatabase(of: zoneID) : id
        let store = container.store
        let views = container.views
        let edges = try store.environment.read { txn in
            try views.incoming(store.zoneKey(database, zoneID), recordID.recordName, in: txn)
        }
        let ids = edges.map { RecordID(recordName: $0.source, zoneID: zoneID) }
        let readable = try fetch(ids, desiredKeys: [], as: actor)
        var result: [(recordID: RecordID, action: Reference.Action)] = []
        for (index, item) in readable.enumerated() where (try? item.result.get()) != nil {
            result.append((ids[index], edges[index].action))
        }
        return result.sorted { UTF8Order.precedes($0.recordID.recordName, $1.recordID.recordName) }
    }
}
