import CumulusStorage

/// Upgrades a data directory of storage format 1, one LMDB environment holding the log
/// and its views, to format 2, where the log has an environment of its own
/// (``DataLayout``): the log's tables are copied into `DATA/log/`, then emptied in the
/// old environment, which keeps the views in place (they are not rebuilt, so a log
/// truncated by retention upgrades as well as a whole one).
///
/// **Crash safety.** Each step can be interrupted and run again on the next open:
/// 1. the copy clears the log environment's tables first and writes `meta` last, so
///    the log environment holds a log ID only once every table was copied whole;
/// 2. one write of the views environment records the head the views have applied and
///    empties the old log tables (which are kept, empty: LMDB table handles are never
///    deleted), then the views environment is flushed. Until this step, the old
///    `meta` still holds the log ID, and step 1 is skipped when the copy carries the
///    same one.
enum LayoutUpgrade {
    /// Entries copied per write transaction.
    static let batch = 20_000

    /// The `meta` keys of format 1 that describe the views, which format 2 keeps in
    /// `viewsState`: the history index's marker, the views' layout version
    /// (`ViewRebuilder`'s `viewsFormat`) and a replayed copy's last sequence.
    static let viewsKeys: [[UInt8]] = [HistoryIndex.markerKey, Array("viewsFormat".utf8), DataLayout.replayedThroughKey]

    /// Upgrades if `views` holds a format-1 log; does nothing otherwise.
    static func upgradeIfNeeded(log: LMDBEnvironment, views: LMDBEnvironment) throws {
        guard try views.hasTable(DataLayout.Table.meta.rawValue) else { return }
        let oldMeta = try format1Table(.meta, in: views)
        guard let logID = try views.read({ try $0.get(oldMeta, key: LogStore.metaLogID) }) else { return }
        if let format = try views.read({ try $0.get(oldMeta, key: LogStore.metaFormat) }), format != [1] {
            throw LogError.storage("\(views.path) holds a log of storage format \(format) in its views environment")
        }
        let newMeta = try DataLayout.open(.meta, in: log)
        if try log.read({ try $0.get(newMeta, key: LogStore.metaLogID) }) != logID {
            for table in DataLayout.logTables { try copy(table, from: views, to: log) }
            try log.write { txn in try txn.put(newMeta, key: LogStore.metaFormat, value: [LogStore.storageFormat]) }
        }
        let viewsState = try DataLayout.open(.viewsState, in: views)
        let oldTables = try DataLayout.logTables.map { try format1Table($0, in: views) }
        try views.write { txn in
            let head = try LogStore.readHead(oldMeta, in: txn)
            try txn.put(viewsState, key: LogStore.viewsApplied, value: BigEndian.bytes(head.sequence) + head.hash)
            for key in viewsKeys {
                if let value = try txn.get(oldMeta, key: key) { try txn.put(viewsState, key: key, value: value) }
            }
            for table in oldTables { try txn.clear(table) }
        }
        try views.sync()
    }

    /// A log table where format 1 kept it, in the views environment (which
    /// `DataLayout.open` refuses for any other purpose).
    private static func format1Table(_ table: DataLayout.Table, in views: LMDBEnvironment) throws -> LMDBTable {
        try views.table(table.rawValue, options: table.options)
    }

    /// Copies `table` whole from `source` into `destination`, in key order, in batches.
    private static func copy(_ table: DataLayout.Table, from source: LMDBEnvironment, to destination: LMDBEnvironment) throws {
        let from = try format1Table(table, in: source)
        let to = try DataLayout.open(table, in: destination)
        try destination.write { txn in try txn.clear(to) }
        var next: [UInt8]? = []
        while let start = next {
            var entries: [([UInt8], [UInt8])] = []
            next = nil
            try source.read { txn in
                try txn.scan(from, from: start.isEmpty ? nil : start) { key, value in
                    if entries.count == batch {
                        next = Array(key)
                        return false
                    }
                    entries.append((Array(key), Array(value)))
                    return true
                }
            }
            try destination.write { txn in
                for (key, value) in entries { try txn.put(to, key: key, value: value, flags: [.append]) }
            }
        }
    }
}
