import CumulusLog
import CumulusModel
import CumulusStorage

/// Brings views of an older layout to the current one in place, where the change is
/// one a pass over the current records can make: unlike a rebuild, this needs none of
/// the log, so a directory whose log retention truncated upgrades as well as one
/// holding its whole log (a rebuild refuses it, ``ViewRebuilder/requireWholeLog(_:)``).
///
/// Layout 8 added `tokenSides` (``ViewTables/tokenSides``): each record's token side,
/// which is what its current version tokenizes to under its schema, so it is
/// computed from the records alone. What is pending in `tokenPending` is unchanged:
/// its current sides are the same sides.
///
/// **Crash safety.** Each batch is its own write transaction and the layout is marked
/// current only after the last; an interrupted migration runs again from the start on
/// the next open, and writes the same sides again.
public enum ViewMigration {
    /// Records visited per write transaction.
    static let batch = 20_000

    /// The layouts this type migrates from (to ``ViewRebuilder/format``).
    static let migratesFrom: Set<UInt8> = [7]

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
                    return try views.keepTokenSides(ofZone: zone.zoneKey, schema: schema, after: after, limit: batch, txn)
                }
                after = done.last
                visited += done.visited
                progress?(visited)
            } while after != nil
        }
        try ViewRebuilder.markCurrent(environment)
        return true
    }
}
