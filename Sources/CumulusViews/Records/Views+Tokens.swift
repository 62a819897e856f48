import CumulusLog
import CumulusModel
import CumulusStorage

/// The token index's two parts: `tokenIndex`, and the pending entries of
/// `tokenPending` not merged into it yet (``PendingTokens`` says why and when).
extension Views {
    /// How a commit writes its records' token entries.
    enum TokenWrites {
        /// Staged as one pending entry per record, merged once the table is full.
        case pending
        /// Straight into `tokenIndex` (a large commit, after merging what was pending).
        case direct
    }

    /// How `commit` writes its token entries, merging what is pending first when it
    /// writes them directly, so no record is both pending and written directly.
    func tokenWrites(for commit: Commit, _ txn: LMDBWriteTransaction) throws -> TokenWrites {
        guard commit.events.count >= PendingTokens.directCommitEvents else { return .pending }
        try mergePendingTokens(txn)
        return .direct
    }

    /// Merges the pending entries once they reach ``PendingTokens/mergeThreshold``:
    /// called at the end of every commit, so the merge points are the same wherever
    /// the log is applied.
    func mergePendingTokensIfFull(_ txn: LMDBWriteTransaction) throws {
        guard try txn.count(tables.tokenPending) >= PendingTokens.mergeThreshold else { return }
        try mergePendingTokens(txn)
    }

    /// Writes every pending entry into `tokenIndex` (only the keys that differ between
    /// its sides, deferred, so the whole merge is one sorted pass) and empties the
    /// pending table.
    func mergePendingTokens(_ txn: LMDBWriteTransaction) throws {
        guard try txn.count(tables.tokenPending) > 0 else { return }
        var failure: (any Error)?
        var built: [UInt8] = []
        try txn.scan(tables.tokenPending, prefix: []) { key, value in
            do {
                guard key.count > FeedKeys.length else { throw StorageError.corrupt("tokenPending key \(Hex.encode(Array(key)))") }
                // A new record (the common case): only puts, built from the stored bytes.
                if try PendingTokens.forEachNewRecordKey(of: value, recordKey: key, building: &built, {
                    try txn.deferPut(tables.tokenIndex, key: $0)
                }) {
                    return true
                }
                let sides = try PendingTokens.sides(of: value, key: key)
                let zoneKey = key.prefix(FeedKeys.length)
                let name = key.dropFirst(FeedKeys.length)
                let (indexed, current) = sides
                if indexed.tokens.isEmpty {
                    // A new record whose entry the loop above did not take: no key lists.
                    try current.forEachIndexKey(zoneKey: zoneKey, name: name) { try txn.deferPut(tables.tokenIndex, key: $0) }
                } else if current.tokens.isEmpty {
                    try indexed.forEachIndexKey(zoneKey: zoneKey, name: name) {
                        try txn.deferDelete(tables.tokenIndex, key: $0)
                    }
                } else {
                    try replaceEntries(
                        tables.tokenIndex, old: indexed.indexKeys(zoneKey: zoneKey, name: name),
                        new: current.indexKeys(zoneKey: zoneKey, name: name), txn)
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        try txn.clear(tables.tokenPending)
    }

    /// Stages the token change of the record `name` in the zone `zoneKey` from `old`
    /// (what the index holds for it unless an entry is already pending) to the side
    /// `current` (``PendingTokens/side(of:schema:)`` of the new version, or of `nil`
    /// when deleted), both as `schema` indexes them.
    func stageTokens(
        zoneKey: [UInt8], name: String, old: Record?, current: [UInt8], schema: EffectiveSchema,
        _ txn: LMDBWriteTransaction
    ) throws {
        let key = ViewKeys.record(zoneKey, name)
        // Most saves find the table empty right after a merge, or hold no entry of
        // theirs: the count is O(1), the lookup a walk of a few hot pages.
        let existing = try txn.count(tables.tokenPending) == 0 ? nil : try txn.get(tables.tokenPending, key: key)
        let indexed: ArraySlice<UInt8>
        if let existing {
            guard let split = existing.withUnsafeBytes({ PendingTokens.sideLength($0) }) else {
                throw StorageError.corrupt("tokenPending entry \(Hex.encode(key))")
            }
            indexed = existing[..<split]
        } else {
            indexed = PendingTokens.side(of: old, schema: schema)[...]
        }
        if indexed.elementsEqual(current) {
            // Back to what the index holds (or never in it): nothing to merge.
            if existing != nil { _ = try txn.delete(tables.tokenPending, key: key) }
        } else {
            try txn.put(tables.tokenPending, key: key, value: PendingTokens.entry(indexed: indexed, current: current))
        }
    }

    /// The pending token entries of the zone `zoneKey`, for a token query to lay over
    /// what `tokenIndex` answers; read once per snapshot (``PendingOverlayCache``).
    public func pendingTokens(zoneKey: [UInt8], _ txn: LMDBReadTransaction) throws -> PendingTokens.Overlay {
        let snapshot = try txn.snapshotID()
        if let snapshot, let overlay = pendingOverlays.overlay(zoneKey: zoneKey, snapshot: snapshot) { return overlay }
        var overlay = PendingTokens.Overlay()
        var failure: (any Error)?
        try txn.scan(tables.tokenPending, prefix: zoneKey) { key, value in
            do {
                overlay.append(
                    name: String(decoding: UnsafeRawBufferPointer(rebasing: key[zoneKey.count...]), as: UTF8.self),
                    current: try PendingTokens.sides(of: value, key: key).current)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        if let snapshot { pendingOverlays.remember(overlay, zoneKey: zoneKey, snapshot: snapshot) }
        return overlay
    }
}
