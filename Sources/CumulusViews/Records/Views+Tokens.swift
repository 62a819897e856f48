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
        /// A large commit's, after merging what was pending: saves straight into
        /// `tokenIndex` (as many keys per word as a merge would write), deletes as delete
        /// markers appended to the emptied pending table.
        case direct
    }

    /// How `commit` writes its token entries. A large commit first merges everything
    /// pending, so it starts with the pending table empty: its saves then write their
    /// entries directly, and its deletes append delete markers to that empty table
    /// (``appendDeleteMarker(at:side:_:)``).
    func tokenWrites(for commit: Commit, _ txn: LMDBWriteTransaction) throws -> TokenWrites {
        guard commit.events.count >= PendingTokens.directCommitEvents else { return .pending }
        try mergePendingTokens(txn)
        return .direct
    }

    /// Once the pending entries reach ``PendingTokens/mergeThreshold``, merges that many
    /// of them, the first in key order: called at the end of every commit, so the merge
    /// points are the same wherever the log is applied. A cascade's thousands of delete
    /// markers are merged a bounded batch per commit, not in the commit that made them.
    func mergePendingTokensIfFull(_ txn: LMDBWriteTransaction) throws {
        guard try txn.count(tables.tokenPending) >= PendingTokens.mergeThreshold else { return }
        try mergePendingTokens(atMost: PendingTokens.mergeThreshold, txn)
    }

    /// Writes the first `limit` pending entries (all by default) into `tokenIndex`
    /// (only the keys that differ between their sides, deferred, so the merge is one
    /// sorted pass) and removes them from the pending table.
    func mergePendingTokens(atMost limit: Int = .max, _ txn: LMDBWriteTransaction) throws {
        let count = try txn.count(tables.tokenPending)
        guard count > 0 else { return }
        let all = limit >= count
        var merged: [[UInt8]] = []
        var failure: (any Error)?
        var built: [UInt8] = []
        try txn.scan(tables.tokenPending, prefix: []) { key, value in
            do {
                guard key.count > FeedKeys.length, let (indexed, current) = PendingTokens.sideBytes(value) else {
                    throw PendingTokens.malformed(key)
                }
                try replaceTokenEntries(
                    from: indexed, to: current, zoneKey: key.prefix(FeedKeys.length), name: key.dropFirst(FeedKeys.length),
                    building: &built, txn)
                if !all { merged.append(Array(key)) }
                return all || merged.count < limit
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        if all {
            try txn.clear(tables.tokenPending)
        } else {
            for key in merged { _ = try txn.delete(tables.tokenPending, key: key) }
        }
    }

    /// Deletes the `tokenIndex` keys of `old` and adds those of `current`, both sides
    /// (as stored, length field included) of the record `name` in the zone `zoneKey`,
    /// touching only the keys that differ. The writes are deferred
    /// (``replaceEntries(_:old:new:_:)``). A record that gains or loses all its words (a
    /// new record, the common case of a merge, or a cascade's victim) has its keys built
    /// in `built` straight from the side's bytes, which may be a stored entry's
    /// (``PendingTokens/forEachIndexKey(ofSide:zoneKey:name:building:_:)``); only an
    /// edit copies and parses both sides to compare them.
    func replaceTokenEntries(
        from old: UnsafeRawBufferPointer, to current: UnsafeRawBufferPointer, zoneKey: some Collection<UInt8>,
        name: some Collection<UInt8>, building built: inout [UInt8], _ txn: LMDBWriteTransaction
    ) throws {
        let oldEmpty = old.elementsEqual(PendingTokens.emptySide)
        let currentEmpty = current.elementsEqual(PendingTokens.emptySide)
        if oldEmpty && currentEmpty { return }
        if oldEmpty || currentEmpty {
            let done = try PendingTokens.forEachIndexKey(
                ofSide: oldEmpty ? current : old, zoneKey: zoneKey, name: name, building: &built
            ) {
                if oldEmpty { try txn.deferPut(tables.tokenIndex, key: $0) } else { try txn.deferDelete(tables.tokenIndex, key: $0) }
            }
            guard done else { throw StorageError.corrupt("token side of \(Hex.encode(Array(zoneKey) + Array(name)))") }
            return
        }
        guard let from = PendingTokens.Side(Array(old)[...]), let to = PendingTokens.Side(Array(current)[...]) else {
            throw StorageError.corrupt("token side of \(Hex.encode(Array(zoneKey) + Array(name)))")
        }
        try replaceEntries(
            tables.tokenIndex, old: from.indexKeys(zoneKey: zoneKey, name: name), new: to.indexKeys(zoneKey: zoneKey, name: name),
            txn)
    }

    /// What the `byType` entry under `key` (``ViewKeys/byType(_:_:_:)``) keeps: the token
    /// side and field-index keys its record's stored version has, or will have once
    /// merged (``KeptEntries``); nothing for a missing entry.
    func keptEntries(at key: [UInt8], _ txn: LMDBReadTransaction) throws -> KeptEntries {
        guard let value = try txn.get(tables.byType, key: key) else { return .none }
        guard let kept = KeptEntries(value) else {
            throw StorageError.corrupt("byType entry \(Hex.encode(key)) holds no kept entries")
        }
        return kept
    }

    /// Moves the token entries of the record under `key` (zone key ‖ `name`) from
    /// `old`, the side kept for it (``keptEntries(at:_:)``), to
    /// `current` (its new version's ``PendingTokens/side(of:schema:)``, or the empty
    /// side when deleted): staged in `tokenPending` or written straight into
    /// `tokenIndex`, as `tokens` says. Nothing is tokenized here: an update, a delete or
    /// a cascade reads the old words from what was kept; the caller keeps `current` in
    /// the record's `byType` entry. A record written directly that has an entry
    /// pending starts from what the index holds for it, the entry's indexed side, and
    /// loses the entry.
    func moveTokens(
        at key: [UInt8], zoneKey: [UInt8], name: String, from old: [UInt8], to current: [UInt8], tokens: TokenWrites,
        _ txn: LMDBWriteTransaction
    ) throws {
        // Equal sides: a pending entry, if any, already ends at `current`.
        guard old != current else { return }
        switch tokens {
        case .pending:
            try stageTokens(at: key, indexed: old, current: current, txn)
        case .direct:
            var indexed = old
            // Only a record this commit deleted before saving it again can have one: the
            // commit merged the rest first.
            if let pending = try pendingIndexedSide(at: key, txn) {
                indexed = Array(pending)
                _ = try txn.delete(tables.tokenPending, key: key)
            }
            var built: [UInt8] = []
            try indexed.withUnsafeBytes { old in
                try current.withUnsafeBytes { current in
                    try replaceTokenEntries(from: old, to: current, zoneKey: zoneKey, name: name.utf8, building: &built, txn)
                }
            }
        }
    }

    /// Stages the token deletes of the record under `key`, deleted in a large commit,
    /// whose index entries are those of `side` (kept for it): a delete marker, deferred
    /// with the commit's others and appended in key order to the pending table the
    /// commit emptied first (``tokenWrites(for:_:)``). A cascade's commit writes one
    /// entry per victim instead of taking each of its words out of the posting blocks;
    /// later commits merge them a bounded batch at a time. No entry of the record can
    /// be pending already: a commit deletes a record once, and writes a save's entries
    /// directly.
    func appendDeleteMarker(at key: [UInt8], side: [UInt8], _ txn: LMDBWriteTransaction) throws {
        guard !PendingTokens.isEmpty(side) else { return }
        try txn.deferPut(tables.tokenPending, key: key, value: PendingTokens.entry(indexed: side, current: PendingTokens.emptySide))
    }

    /// Stages the token change of the record under `key` from `kept` (what the index
    /// holds for it unless an entry is already pending) to the side `current`.
    private func stageTokens(at key: [UInt8], indexed kept: [UInt8], current: [UInt8], _ txn: LMDBWriteTransaction) throws {
        let pending = try pendingIndexedSide(at: key, txn)
        let indexed = pending ?? kept[...]
        if indexed.elementsEqual(current) {
            // Back to what the index holds (or never in it): nothing to merge.
            if pending != nil { _ = try txn.delete(tables.tokenPending, key: key) }
        } else {
            try txn.put(tables.tokenPending, key: key, value: PendingTokens.entry(indexed: indexed, current: current))
        }
    }

    /// The indexed side (what `tokenIndex` holds for the record) of the entry pending
    /// under `key`, or `nil` if none is. Most writes find the table empty right after
    /// a merge, or hold no entry of theirs: the count is O(1), the lookup a walk of a
    /// few hot pages.
    private func pendingIndexedSide(at key: [UInt8], _ txn: LMDBWriteTransaction) throws -> ArraySlice<UInt8>? {
        guard try txn.count(tables.tokenPending) > 0, let existing = try txn.get(tables.tokenPending, key: key) else {
            return nil
        }
        guard let split = existing.withUnsafeBytes({ PendingTokens.sideLength($0) }) else { throw PendingTokens.malformed(key) }
        return existing[..<split]
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
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: key[zoneKey.count...]), as: UTF8.self)
                // Only the current side counts here: what the index holds for the record
                // is dropped whatever it is. A deleted record's (a cascade leaves
                // thousands) is empty and needs no parsing.
                guard let current = PendingTokens.sideBytes(value)?.current else {
                    throw PendingTokens.malformed(key)
                }
                if current.elementsEqual(PendingTokens.emptySide) {
                    overlay.append(name: name)
                } else {
                    guard let side = PendingTokens.Side(Array(current)[...]) else {
                        throw PendingTokens.malformed(key)
                    }
                    overlay.append(name: name, current: side)
                }
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
