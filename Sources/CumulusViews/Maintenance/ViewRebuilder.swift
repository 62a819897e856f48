import CumulusLog
import CumulusStorage

/// Derives views from the log: `rebuild` drops every view and replays the whole log
/// into it, through the same ``Views/apply(_:in:)`` the writer uses.
public enum ViewRebuilder {
    /// Commits replayed per write transaction: large enough to amortize the fsync,
    /// small enough to keep a transaction's dirty pages modest.
    public static let batchSize = 5_000

    /// The views' layout version, kept in `viewsState`: a data directory whose views were
    /// built by an older layout has them rebuilt from the log when it is opened
    /// writable (``upgradeIfNeeded(_:from:progress:)``). 2: schemas, roles and the
    /// zones of each container environment; only schema-declared indexes. 3: token
    /// entries ordered by record creation time before name (``IndexKeys``). 4: token
    /// entries of small commits staged in `tokenPending` (``PendingTokens``), so a
    /// rebuild's `tokenIndex` is what the merges left, not every entry. 5: `tokenIndex`
    /// keeps each word's postings in blocks (``PostingBlock``). 6: asset reference
    /// counts (`assetRefs`, `assetsOut`). 7: `assetsOut` holds each file's size, and
    /// `usage` the bytes held per payer and per container (``RecordUsage``). 8: each
    /// record's token side kept in `tokenSides`. 9: the side kept as the value of the
    /// record's `byType` entry instead, one entry a record fewer. 10: each record's
    /// field-index keys kept there too (``KeptEntries``), so a delete or an update
    /// decodes none of the old version's fields; made in place from layouts 7 to 9
    /// (``ViewMigration``).
    public static let format: UInt8 = 10
    static let formatKey: [UInt8] = Array("viewsFormat".utf8)

    /// The views' layout version stored in `environment` (`nil`: none recorded).
    public static func storedFormat(in environment: LMDBEnvironment) throws -> UInt8? {
        let meta = try DataLayout.open(.viewsState, in: environment)
        return try environment.read { try $0.get(meta, key: formatKey)?.first }
    }

    /// Records that the views of `environment` follow the current ``format``.
    public static func markCurrent(_ environment: LMDBEnvironment) throws {
        let meta = try DataLayout.open(.viewsState, in: environment)
        try environment.write { try $0.put(meta, key: formatKey, value: [format]) }
    }

    /// Rebuilds the views of a writable data directory whose views an older layout
    /// made (the log is the truth, so nothing is lost); marks a new one current.
    /// Returns whether it rebuilt. A read-only directory cannot be rebuilt, and its
    /// views would answer wrongly (an older token order, say), so it is refused with
    /// `StorageError.invalidArgument` saying how to upgrade it.
    @discardableResult
    public static func upgradeIfNeeded(_ views: Views, from store: LogStore, progress: ((UInt64) -> Void)? = nil) throws
        -> Bool
    {
        let stored = try storedFormat(in: store.environment)
        guard stored != format else { return false }
        if store.environment.options.readOnly {
            guard try store.lastSequence() == 0 else {
                let path = store.environment.path
                // A replayed copy (`cumulus replay`, a checkpoint) is read-only on disk
                // and must stay as it was replayed: it is made again, not upgraded.
                let remedy =
                    try isReplayedCopy(store)
                    ? "It is a replayed copy: replay it again with this build (`cumulus replay`)"
                    : "Open it writable once (`cumulus verify --data \(path)` or `cumulus serve`) to rebuild them from "
                        + "the log, then open it read-only again"
                throw StorageError.invalidArgument(
                    "the views in \(path) were built by layout \(stored.map(String.init) ?? "1"); this build reads "
                        + "layout \(format). \(remedy)")
            }
            return false
        }
        guard try store.lastSequence() > 0 else {
            try markCurrent(store.environment)
            return false
        }
        try rebuild(views, from: store, progress: progress)
        return true
    }

    /// Refuses a log that dropped its oldest commits (`--retain-commits`): views
    /// replayed from part of a log would be wrong (records the dropped commits made
    /// would be missing), and a rebuild would replace good views with them.
    public static func requireWholeLog(_ store: LogStore) throws {
        let first = store.firstRetained
        guard first <= 1 else {
            throw StorageError.invalidArgument(
                "cannot rebuild views from the log in \(store.environment.path): it starts at commit \(first) "
                    + "(retention dropped the earlier ones), and views replayed from part of a log would be wrong. "
                    + "The live views are still right; to start over, seed a new copy from a leader's snapshot")
        }
    }

    /// Whether `store` is a replayed copy: its `meta` records `replayedThrough`.
    private static func isReplayedCopy(_ store: LogStore) throws -> Bool {
        let meta = try DataLayout.open(.viewsState, in: store.environment)
        return try store.environment.read { try $0.get(meta, key: DataLayout.replayedThroughKey) != nil }
    }

    /// Clears `views` (which must live in `store`'s environment) and replays every
    /// commit of `store` into them. `progress` gets the number of commits replayed.
    /// Returns the number of commits replayed. A log that dropped its oldest commits
    /// (retention) is refused before anything is cleared (``requireWholeLog(_:)``).
    @discardableResult
    public static func rebuild(_ views: Views, from store: LogStore, progress: ((UInt64) -> Void)? = nil) throws -> UInt64 {
        try requireWholeLog(store)
        try store.environment.write { txn in
            for table in views.tables.all { try txn.clear(table) }
        }
        let replayed = try replay(store, into: views, in: store.environment, progress: progress)
        try markCurrent(store.environment)
        return replayed
    }

    /// Replays every commit the views of `store` have applied (its feeds and history
    /// say which: ``LogStore/appliedHead()``, the log's head once they caught up) into
    /// `views` living in `environment` (the store's own, or a scratch one for
    /// verification), in batches.
    @discardableResult
    public static func replay(
        _ store: LogStore, into views: Views, in environment: LMDBEnvironment, progress: ((UInt64) -> Void)? = nil
    ) throws -> UInt64 {
        try requireWholeLog(store)
        let last = try store.appliedHead().sequence
        try store.replayInBatches(
            through: last, batchSize: batchSize, into: environment, progress: progress,
            // What each saved record derives to, made while the batch before is written.
            prepare: { batch in try environment.read { txn in views.derive(batch, in: txn) } }
        ) { batch, derived, txn in
            for (index, commit) in batch.enumerated() { try views.apply(commit, derived: derived[index], in: txn) }
        }
        return last
    }
}
