import CumulusLog
import CumulusModel
import CumulusStorage

/// Brings views of an older layout to the current one in place, where the change is
/// one a pass over the current records can make: unlike a rebuild, this needs none of
/// the log, so a directory whose log retention truncated upgrades as well as one
/// holding its whole log (a rebuild refuses it, ``ViewRebuilder/requireWholeLog(_:)``).
///
/// Layout 8 kept each record's token side in a table of its own (`tokenSides`); layout
/// 9 kept it as the value of the record's `byType` entry; layout 10 keeps its field-index
/// keys there too (``KeptEntries``). Both are what the record's current version indexes
/// under its schema, so they are computed from the records alone, from any of these
/// layouts; layout 8's table is then emptied. What is pending in `tokenPending` is
/// unchanged: its current sides are the same sides.
///
/// **Crash safety.** Each batch is its own write transaction and the layout is marked
/// current only after the last; an interrupted migration runs again from the start on
/// the next open, and writes the same sides again.
public enum ViewMigration {
    /// Records visited per write transaction.
    static let batch = 20_000

    /// The layouts this type migrates from (to ``ViewRebuilder/format``).
    static let migratesFrom: Set<UInt8> = [7, 8, 9]

    /// Layout 8's table of token sides, emptied once the sides are in `byType`.
    static let layout8Sides = "tokenSides"

    /// Migrates the views of `environment` in place if they follow a layout that
    /// ``migratesFrom`` lists; the environment must be writable. `progress` gets the
    /// records visited so far. Returns whether it migrated.
    @discardableResult
    public static func migrateIfNeeded(_ views: Views, in environment: LMDBEnvironment, progress: ((Int) -> Void)? = nil)
        throws -> Bool
    {
        guard !environment.options.readOnly, let stored = try ViewRebuilder.storedFormat(in: environment),
            migratesFrom.contains(stored)
        else { return false }
        var zones: [(id: SchemaID, zoneKey: [UInt8])] = []
        try environment.read { txn in
            try txn.scan(views.tables.schemaZones, prefix: []) { key, _ in
                guard let zone = SchemaCatalog.schemaZone(key) else {
                    throw StorageError.corrupt("schemaZones key \(Hex.encode(Array(key)))")
                }
                zones.append(zone)
                return true
            }
        }
        var visited = 0
        for zone in zones {
            var after: [UInt8]?
            repeat {
                let done = try environment.write { txn in
                    let schema = try views.schema(zone.id, in: txn)
                    return try keepEntries(views, ofZone: zone.zoneKey, schema: schema, after: after, limit: batch, txn)
                }
                after = done.last
                visited += done.visited
                progress?(visited)
            } while after != nil
        }
        if stored == 8 {
            let sides = try environment.table(layout8Sides)
            try environment.write { try $0.clear(sides) }
        }
        try ViewRebuilder.markCurrent(environment)
        return true
    }

    /// Keeps what up to `limit` records of the zone `zoneKey` index under `schema`, those
    /// after the key `after` (`nil`: from the zone's first), in each one's `byType` entry
    /// (``KeptEntries``): one batch of a migration, in one write transaction. Returns how
    /// many records it visited and the last one's key, `nil` once the zone is done.
    static func keepEntries(
        _ views: Views, ofZone zoneKey: [UInt8], schema: EffectiveSchema, after: [UInt8]?, limit: Int,
        _ txn: LMDBWriteTransaction
    ) throws -> (visited: Int, last: [UInt8]?) {
        var entries: [(key: [UInt8], value: [UInt8])] = []
        var last: [UInt8]?
        var visited = 0
        let start = after.map { $0 + [0] } ?? zoneKey
        try txn.scan(views.tables.records, from: start, to: LMDBReadTransaction.upperBound(ofPrefix: zoneKey)) { key, value in
            var hints = RecordDecodeHints()
            let record = try RecordCodec.decodeLazily(value, hints: &hints)
            let name = record.recordID.recordName
            let byTypeKey = ViewKeys.byType(zoneKey, record.recordType, name)
            let kept = KeptEntries.value(
                side: PendingTokens.side(of: record, schema: schema),
                fieldKeys: IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema),
                prefixLength: ViewKeys.typePrefixLength(zoneKey), nameLength: name.utf8.count)
            if !kept.isEmpty { entries.append((byTypeKey, kept)) }
            last = Array(key)
            visited += 1
            return visited < limit
        }
        // Written after the scan: a table must not change under its own cursor (the
        // entries are another table's, but one cursor rule is simpler to keep).
        for (key, value) in entries { try txn.put(views.tables.byType, key: key, value: value) }
        return (visited, visited < limit ? nil : last)
    }
}
