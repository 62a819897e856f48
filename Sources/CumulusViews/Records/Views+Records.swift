import CumulusLog
import CumulusModel
import CumulusStorage

/// Current records: the `records` table, records by type, and the field and token
/// index entries each record's schema declares (token entries through
/// `Views+Tokens`, staged or direct as the commit's ``Views/TokenWrites`` says).
extension Views {
    /// Stores `record` (in the zone `zoneKey`, under `schema`), replacing its by-type
    /// entry and index entries; with `derived` (made under `schema`), without deriving
    /// them again. Returns the stored bytes of the version replaced (0: none) and of
    /// the new one.
    @discardableResult
    func saveRecord(
        _ record: Record, zoneKey: [UInt8], schema: EffectiveSchema, tokens: TokenWrites, derived: RecordDerivation?,
        _ txn: LMDBWriteTransaction
    ) throws -> (old: Int, new: Int) {
        let name = record.recordID.recordName
        let key = ViewKeys.record(zoneKey, name)
        let old = try storedHeader(at: key, txn)
        let oldKey = old.map { ViewKeys.byType(zoneKey, $0.recordType, name) }
        let oldKept = try oldKey.map { try keptEntries(at: $0, txn) } ?? .none
        let newSide = derived?.tokenSide ?? PendingTokens.side(of: record, schema: schema)
        let newFields = derived?.fieldEntries ?? IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema)
        let newKey = old?.recordType == record.recordType ? oldKey ?? [] : ViewKeys.byType(zoneKey, record.recordType, name)
        let newValue = KeptEntries.value(
            side: newSide, fieldKeys: newFields, prefixLength: ViewKeys.typePrefixLength(zoneKey), nameLength: name.utf8.count)
        // Deferred as index entries are: by-type keys are scattered by name too. The
        // entry keeps the record's words and field keys, so it changes with them.
        if let oldKey, old?.recordType != record.recordType {
            try txn.deferDelete(tables.byType, key: oldKey)
        }
        if old?.recordType != record.recordType || oldKept.value != newValue {
            try txn.deferPut(tables.byType, key: newKey, value: newValue)
        }
        if let oldKey {
            // Only the entries that differ: an edit of one field leaves the pages of
            // the others untouched.
            let prefix = oldKey.prefix(ViewKeys.typePrefixLength(zoneKey))
            try replaceEntries(tables.fieldIndex, old: oldKept.fieldKeys(prefix: prefix, name: name.utf8), new: newFields, txn)
        } else {
            for entry in newFields { try txn.deferPut(tables.fieldIndex, key: entry) }
        }
        try moveTokens(at: key, zoneKey: zoneKey, name: name, from: oldKept.side, to: newSide, tokens: tokens, txn)
        let stored = try derived?.stored ?? RecordDerivation.stored(record)
        try txn.put(tables.records, key: key, value: stored)
        return (old?.size ?? 0, stored.count)
    }

    /// The type of the record stored under `key`, how many bytes it takes as stored,
    /// and with `creator` who created it (read from the header only when asked); `nil`
    /// if none is. All that replacing or deleting its entries reads of the old version:
    /// what it indexes is kept in its `byType` entry (``KeptEntries``).
    func storedHeader(at key: [UInt8], creator: Bool = false, _ txn: LMDBReadTransaction) throws
        -> (recordType: String, size: Int, creator: String?)?
    {
        try txn.withValue(tables.records, key: key) { buffer in
            guard creator else { return (try RecordReader.recordType(of: buffer), buffer.count, nil) }
            let reader = try RecordReader(buffer)
            return (reader.recordType, buffer.count, try reader.creatorName())
        }
    }

    /// Moves the field and token entries of `record` from what it keeps (made under
    /// the schema before) to what `schema` indexes, touching only the keys that differ:
    /// a record whose type's indexes a schema change altered. Its token entries must
    /// all be merged (nothing pending), as a schema change makes them before reindexing.
    func reindexEntries(of record: Record, to schema: EffectiveSchema, zoneKey: [UInt8], _ txn: LMDBWriteTransaction)
        throws
    {
        let name = record.recordID.recordName
        let byTypeKey = ViewKeys.byType(zoneKey, record.recordType, name)
        let prefix = byTypeKey.prefix(ViewKeys.typePrefixLength(zoneKey))
        let kept = try keptEntries(at: byTypeKey, txn)
        let fields = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema)
        try replaceEntries(tables.fieldIndex, old: kept.fieldKeys(prefix: prefix, name: name.utf8), new: fields, txn)
        let side = PendingTokens.side(of: record, schema: schema)
        try moveTokens(
            at: ViewKeys.record(zoneKey, name), zoneKey: zoneKey, name: name, from: kept.side, to: side, tokens: .direct,
            txn)
        let value = KeptEntries.value(side: side, fieldKeys: fields, prefixLength: prefix.count, nameLength: name.utf8.count)
        if value != kept.value { try txn.put(tables.byType, key: byTypeKey, value: value) }
    }

    /// Deletes the keys only in `old`, adds those only in `new` (both sorted and
    /// unique), in one merge walk. The writes are deferred: a transaction's index
    /// entries (a group of saves, a follower's batch, a cascade, a rebuild's batch) are
    /// written together in key order through one cursor (`LMDBWriteTransaction.deferPut`).
    func replaceEntries(_ table: LMDBTable, old: [[UInt8]], new: [[UInt8]], _ txn: LMDBWriteTransaction) throws {
        guard old != new else { return }
        var i = 0
        var j = 0
        while i < old.count || j < new.count {
            let order = i == old.count ? 1 : j == new.count ? -1 : UTF8Order.compare(old[i], new[j])
            if order < 0 {
                try txn.deferDelete(table, key: old[i])
                i += 1
            } else if order > 0 {
                try txn.deferPut(table, key: new[j])
                j += 1
            } else {
                i += 1
                j += 1
            }
        }
    }

    /// Removes the record and its by-type and index entries, found through what its
    /// `byType` entry keeps (no schema, no decode of its fields). Returns how many bytes
    /// it took as stored (0: there was none) and, in the public database, who created
    /// it (who paid for it, ``RecordUsage``).
    @discardableResult
    func deleteRecord(
        _ name: String, zoneKey: [UInt8], recordType: String, in database: DatabaseID, tokens: TokenWrites,
        _ txn: LMDBWriteTransaction
    ) throws -> (size: Int, creator: String?) {
        let key = ViewKeys.record(zoneKey, name)
        guard let found = try storedHeader(at: key, creator: database.scope == .public, txn) else {
            try txn.deferDelete(tables.byType, key: ViewKeys.byType(zoneKey, recordType, name))
            return (0, nil)
        }
        let byTypeKey = ViewKeys.byType(zoneKey, found.recordType, name)
        let kept = try keptEntries(at: byTypeKey, txn)
        try kept.forEachFieldKey(prefix: byTypeKey.prefix(ViewKeys.typePrefixLength(zoneKey)), name: name.utf8) {
            try txn.deferDelete(tables.fieldIndex, key: $0)
        }
        switch tokens {
        case .pending:
            try moveTokens(at: key, zoneKey: zoneKey, name: name, from: kept.side, to: PendingTokens.emptySide, tokens: .pending, txn)
        case .direct:
            try appendDeleteMarker(at: key, side: kept.side, txn)
        }
        // Reading what was kept wrote what byType held back, and left its page hot: a
        // delete now costs less than holding one back to be written by the next read.
        _ = try txn.delete(tables.byType, key: byTypeKey)
        _ = try txn.delete(tables.records, key: key)
        return (found.size, found.creator)
    }

    /// Stores `changeTag` in the record by patching its stored bytes: a target's tag
    /// bump needs no decode and re-encode of the record. A tag of another length
    /// changes what the record holds, which `usage` is told.
    func bumpChangeTag(
        _ id: RecordID, to changeTag: String, in database: DatabaseID, usage: inout RecordUsage, _ txn: LMDBWriteTransaction
    ) throws {
        let key = ViewKeys.record(zoneKeys.zone(database, id.zoneID), id.recordName)
        guard let (bumped, oldSize, creator) = try txn.withValue(tables.records, key: key, { buffer in
            let reader = try RecordReader(buffer)
            let bumped = reader.replacingChangeTag(with: changeTag)
            let creator = bumped.count != buffer.count && database.scope == .public ? try reader.creatorName() : nil
            return (bumped, buffer.count, creator)
        }) else { return }
        try txn.put(tables.records, key: key, value: bumped)
        usage.charge(Int64(bumped.count - oldSize), in: database, creator: creator)
    }

    /// The record with `id` in `database`, or `nil`.
    public func record(_ id: RecordID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Record? {
        try record(zoneKey: zoneKeys.zone(database, id.zoneID), name: id.recordName, txn)
    }

    /// Whether a record with `id` exists in `database`.
    public func recordExists(_ id: RecordID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Bool {
        try txn.contains(tables.records, key: ViewKeys.record(zoneKeys.zone(database, id.zoneID), id.recordName))
    }

    /// Names of the records of `recordType` in a zone, in byte order.
    public func recordNames(ofType recordType: String, zoneKey: [UInt8], in txn: LMDBReadTransaction) throws -> [String] {
        let prefix = ViewKeys.typePrefix(zoneKey, recordType)
        var names: [String] = []
        try txn.scan(tables.byType, prefix: prefix) { key, _ in
            names.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[prefix.count...]), as: UTF8.self))
            return true
        }
        return names
    }

    /// The record named `name` in the zone whose key is `zoneKey`, or `nil`: for
    /// callers that already hold the zone key (a query reads many records of one zone
    /// and need not hash the zone's identity for each).
    public func record(zoneKey: [UInt8], name: String, _ txn: LMDBReadTransaction) throws -> Record? {
        try storedRecord(at: ViewKeys.record(zoneKey, name), txn)
    }

    /// The stored bytes of the record named `name` in the zone `zoneKey`, or `nil`:
    /// borrowed from `txn`, valid until it ends (``LMDBReadTransaction/borrowedValue(_:key:)``).
    /// What reads that write records out from their bytes walk.
    public func storedRecord(zoneKey: [UInt8], name: String, _ txn: LMDBReadTransaction) throws
        -> UnsafeRawBufferPointer?
    {
        try ViewKeys.withRecordKey(zoneKey, name) { key in try txn.borrowedValue(tables.records, key: key) }
    }

    /// Calls `body` with a cursor on the records view, for
    /// ``storedRecord(zoneKey:name:cursor:)``; the cursor closes when `body` returns,
    /// but what it found stays valid until `txn` ends, as `mdb_get`'s values do.
    public func withRecordsCursor<R>(_ txn: LMDBReadTransaction, _ body: (LMDBCursor) throws -> R) throws -> R {
        try txn.withCursor(tables.records, body)
    }

    /// ``storedRecord(zoneKey:name:_:)`` through `cursor` (from
    /// ``withRecordsCursor(_:_:)``): LMDB looks in the cursor's current leaf page first
    /// when the key falls within it, so lookups made in key order (the candidates an
    /// index walk yields, names that share a prefix) skip most of the root-to-leaf
    /// descent `mdb_get` makes every time.
    public func storedRecord(zoneKey: [UInt8], name: String, cursor: LMDBCursor) throws -> UnsafeRawBufferPointer? {
        try ViewKeys.withRecordKey(zoneKey, name) { key in try cursor.seek(to: key)?.value }
    }

    /// The type of the record `name` in the zone `zoneKey`, or `nil` if there is none:
    /// read from the stored header, without decoding the fields.
    public func recordType(zoneKey: [UInt8], name: String, _ txn: LMDBReadTransaction) throws -> String? {
        try txn.withValue(tables.records, key: ViewKeys.record(zoneKey, name)) { try RecordReader.recordType(of: $0) }
    }

    /// The record stored under `key` in the `records` table, or `nil`: its values
    /// stay in their (copied) bytes until read, so a caller pays only for what it uses.
    func storedRecord(at key: [UInt8], _ txn: LMDBReadTransaction) throws -> Record? {
        var hints = RecordDecodeHints()
        return try storedRecord(at: key, hints: &hints, txn)
    }

    /// ``storedRecord(at:_:)`` reusing the strings `hints` holds.
    func storedRecord(at key: [UInt8], hints: inout RecordDecodeHints, _ txn: LMDBReadTransaction) throws -> Record? {
        try txn.withValue(tables.records, key: key) { try RecordCodec.decodeLazily($0, hints: &hints) }
    }
}
