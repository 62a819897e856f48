import CLMDB

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A read-only snapshot of an `LMDBEnvironment`, passed to `LMDBEnvironment.read`'s body.
///
/// **Lifetime.** Valid only while that body runs; afterwards every method throws
/// `.invalidArgument`. Do not store it or hand it to another thread or task (it is not
/// `Sendable`). Buffers it hands out (`withValue`, `scan`, cursors) point into the memory
/// map and are valid only until the body returns — copy what you keep.
///
/// `LMDBWriteTransaction` inherits from this class, so code written against a read
/// transaction also runs inside a write (and sees the write's uncommitted changes).
///
/// Keys must be 1...`maxKeySize` bytes; `.emptyKey`/`.keyTooLarge` are thrown before LMDB
/// is called, so such an error leaves the transaction usable.
public class LMDBReadTransaction {
    let environment: LMDBEnvironment
    // Unchecked exclusivity on what every call reads or changes: a transaction is used
    // on one thread (LMDB's rule, above), and no access to these overlaps another
    // (each is a momentary read, an assignment, or one call changing `deferred` in
    // place). Checked, each `get`, `put` and deferred key paid runtime calls to begin
    // and end every access.
    @exclusivity(unchecked) private var handle: OpaquePointer?
    /// Set when any LMDB call in this transaction returned MDB_MAP_FULL, which poisons
    /// the transaction; `LMDBEnvironment.write` then grows the map and retries.
    var hitMapFull = false
    /// A write transaction's held-back index writes (empty in a read transaction),
    /// changed in place.
    @exclusivity(unchecked) var deferred: DeferredWrites

    init(environment: LMDBEnvironment, handle: OpaquePointer, deferred: DeferredWrites = DeferredWrites()) {
        self.environment = environment
        self.handle = handle
        self.deferred = deferred
    }

    /// The snapshot this transaction reads, as LMDB numbers it (`mdb_txn_id`): two read
    /// transactions of one environment with the same ID see the same data, so what is
    /// derived from the data may be cached under it. `nil` in a write transaction, whose
    /// data changes as it writes.
    public func snapshotID() throws(StorageError) -> UInt64? {
        if self is LMDBWriteTransaction { return nil }
        return UInt64(mdb_txn_id(try txnHandle()))
    }

    /// Called by the environment when the closure ends, just before the transaction does.
    func invalidate() { handle = nil }

    func txnHandle() throws(StorageError) -> OpaquePointer {
        guard let handle else {
            throw .invalidArgument("transaction used after its closure returned")
        }
        return handle
    }

    func dbi(_ table: LMDBTable) throws(StorageError) -> MDB_dbi {
        let dbi = try ownDBI(table)
        // Every use of a table passes here: writing what is held back for it first
        // keeps deferred writes invisible to everything, this transaction included.
        if !deferred.isEmpty, let work = deferred.take(table) {
            try writeDeferred(work)
        }
        return dbi
    }

    /// `table`'s handle after checking it belongs to this environment, without writing
    /// anything held back: for `compare`, which a scan calls per entry while its
    /// cursor holds a page (a write there would move the page under it).
    func ownDBI(_ table: LMDBTable) throws(StorageError) -> MDB_dbi {
        guard table.environmentID == environment.id else {
            throw .invalidArgument("\(table) belongs to another environment")
        }
        return table.dbi
    }

    /// Writes one table's held-back operations, taken from `deferred`, and gives their
    /// buffers back to it for reuse (see ``DeferredWrites``).
    func writeDeferred(_ work: consuming DeferredWrites.Pending) throws(StorageError) {
        var work = work
        let txn = try txnHandle()
        var stat = MDB_stat()
        let rc = mdb_stat(txn, work.table.dbi, &stat)
        guard rc == 0 else { throw failure(rc, "mdb_stat(\(work.table.name))") }
        do {
            try DeferredWrites.write(&work, txn: txn, empty: stat.ms_entries == 0)
        } catch {
            if case .lmdb(let code, _, _) = error, code == MDB_MAP_FULL { hitMapFull = true }
            throw error
        }
        deferred.recycle(work)
    }

    /// Converts a failed LMDB return code into an error, noting MDB_MAP_FULL.
    func failure(_ code: Int32, _ operation: String) -> StorageError {
        if code == MDB_MAP_FULL { hitMapFull = true }
        return .lmdb(code, operation)
    }

    // MARK: Point lookups

    /// Copies out the value stored under `key`, or `nil` if there is none.
    /// In a `.dupSort` table this is the first (smallest) value.
    public func get(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> [UInt8]? {
        try rawValue(table, key: key).map { [UInt8]($0) }
    }

    /// Calls `body` with the value stored under `key`, without copying it, and returns
    /// its result; returns `nil` without calling `body` if there is no such key.
    ///
    /// The buffer points into the memory map: valid only inside `body`, and in a write
    /// transaction only until the next change. Never write through it.
    @discardableResult
    public func withValue<R>(
        _ table: LMDBTable, key: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws -> R
    ) throws -> R? {
        guard let value = try rawValue(table, key: key) else { return nil }
        return try body(value)
    }

    /// The value stored under `key`, not copied, or `nil` if there is none.
    ///
    /// Lifetime, as lmdb.h states it for `mdb_get`: the buffer points into the memory
    /// map and stays valid until the transaction ends, or in a write transaction until
    /// its next change. So a read may hand out a page of such buffers (a query's stored
    /// records) to be written out before its body returns; nothing may keep one past
    /// that, and nothing may write through it.
    public func borrowedValue(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> UnsafeRawBufferPointer? {
        try rawValue(table, key: key)
    }

    /// Whether `key` is present.
    public func contains(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> Bool {
        try rawValue(table, key: key) != nil
    }

    /// The value under `key` as a pointer into the map (see `withValue` for lifetime).
    func rawValue(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> UnsafeRawBufferPointer? {
        let txn = try txnHandle()
        let dbi = try dbi(table)
        let outcome: Result<UnsafeRawBufferPointer?, StorageError> = key.withUnsafeBytes { keyBytes in
            if let error = environment.keyError(keyBytes.count) { return .failure(error) }
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var value = MDB_val()
            let rc = mdb_get(txn, dbi, &keyVal, &value)
            switch rc {
            case 0: return .success(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
            case MDB_NOTFOUND: return .success(nil)
            default: return .failure(failure(rc, "mdb_get(\(table.name))"))
            }
        }
        return try outcome.get()
    }

    // MARK: Whole-table queries

    /// Number of entries (key/value pairs; each duplicate counts) in `table`.
    public func count(_ table: LMDBTable) throws(StorageError) -> Int {
        var stat = MDB_stat()
        let rc = mdb_stat(try txnHandle(), try dbi(table), &stat)
        guard rc == 0 else { throw failure(rc, "mdb_stat(\(table.name))") }
        return stat.ms_entries
    }

    /// A copy of the entry with the lowest key (and, in `.dupSort` tables, lowest value).
    public func first(_ table: LMDBTable) throws(StorageError) -> (key: [UInt8], value: [UInt8])? {
        try withCursorTyped(table) { cursor throws(StorageError) in
            try cursor.first().map { ([UInt8]($0.key), [UInt8]($0.value)) }
        }
    }

    /// A copy of the entry with the highest key (and, in `.dupSort` tables, highest value),
    /// e.g. the last sequence number of a log keyed by big-endian integers.
    public func last(_ table: LMDBTable) throws(StorageError) -> (key: [UInt8], value: [UInt8])? {
        try withCursorTyped(table) { cursor throws(StorageError) in
            try cursor.last().map { ([UInt8]($0.key), [UInt8]($0.value)) }
        }
    }

    // MARK: Range scans

    /// Visits entries with `start <= key < end` in key order (descending if `reverse`),
    /// calling `body(key, value)` until it returns `false`. A `nil` bound is open.
    /// In `.dupSort` tables every value is visited, values in order under their key.
    ///
    /// The buffers point into the map and are valid only during that call of `body`.
    /// Do not modify `table` from inside `body`; collect keys and change them afterwards.
    public func scan(
        _ table: LMDBTable, from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        // LMDB has no empty key: an empty lower bound is no bound, an empty upper bound
        // admits nothing.
        let start = start?.isEmpty == true ? nil : start
        if let end, end.isEmpty { return }
        if let start, let end, try compare(table, start, end) >= 0 { return }
        try withCursor(table) { cursor in
            if !reverse {
                var entry = if let start { try cursor.seek(atOrAfter: start) } else { try cursor.first() }
                while let current = entry {
                    if let end, try compare(table, current.key, end) >= 0 { return }
                    guard try body(current.key, current.value) else { return }
                    entry = try cursor.next()
                }
            } else {
                var entry: LMDBCursor.Entry?
                if let end {
                    // Position on the first key >= end, then step back once; if every key
                    // is below `end`, the last entry is where to begin.
                    entry = try cursor.seek(atOrAfter: end) != nil ? try cursor.previous() : try cursor.last()
                } else {
                    entry = try cursor.last()
                }
                while let current = entry {
                    if let start, try compare(table, current.key, start) < 0 { return }
                    guard try body(current.key, current.value) else { return }
                    entry = try cursor.previous()
                }
            }
        }
    }

    /// Visits entries whose key starts with `prefix` (all entries if it is empty), in key
    /// order or reverse; same contract as `scan(_:from:to:reverse:_:)`.
    public func scan(
        _ table: LMDBTable, prefix: [UInt8], reverse: Bool = false,
        _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try scan(
            table, from: prefix.isEmpty ? nil : prefix, to: Self.upperBound(ofPrefix: prefix),
            reverse: reverse, body)
    }

    /// The smallest key greater than every key starting with `prefix`, or `nil` if there
    /// is none (empty prefix or all 0xFF).
    public static func upperBound(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var bound = prefix
        while let lastByte = bound.last {
            if lastByte == 0xFF {
                bound.removeLast()
            } else {
                bound[bound.count - 1] = lastByte + 1
                return bound
            }
        }
        return nil
    }

    // MARK: Duplicates (`.dupSort` tables)

    /// Visits every value stored under `key` in sorted order until `body` returns `false`.
    /// Works on plain tables too (at most one value). Buffers are valid only during the call.
    public func values(
        _ table: LMDBTable, key: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(table) { cursor in
            var entry = try cursor.seek(to: key)
            while let current = entry {
                guard try body(current.value) else { return }
                entry = table.isDupSort ? try cursor.nextDuplicate() : nil
            }
        }
    }

    /// Whether the pair `key`/`value` is stored in the `.dupSort` table `table`: one
    /// lookup, however many values the key holds.
    public func contains(_ table: LMDBTable, key: some ContiguousBytes, value: some ContiguousBytes) throws -> Bool {
        guard table.isDupSort else {
            guard let stored = try rawValue(table, key: key) else { return false }
            return value.withUnsafeBytes { $0.elementsEqual(stored) }
        }
        return try withCursor(table) { cursor in try cursor.seek(to: key, value: value) != nil }
    }

    /// Number of values stored under `key` (0 if absent; at most 1 for plain tables).
    public func valueCount(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> Int {
        guard table.isDupSort else { return try rawValue(table, key: key) == nil ? 0 : 1 }
        return try withCursorTyped(table) { cursor throws(StorageError) in
            try cursor.seek(to: key) == nil ? 0 : try cursor.duplicateCount()
        }
    }

    // MARK: Cursors

    /// Opens a cursor on `table` for the duration of `body`. The cursor, and every entry
    /// it returns, must not be used after `body` returns (methods then throw).
    /// Errors thrown by `body` propagate unchanged.
    @discardableResult
    public func withCursor<R>(_ table: LMDBTable, _ body: (LMDBCursor) throws -> R) throws -> R {
        let cursor = try openCursor(table)
        defer { cursor.close() }
        return try body(cursor)
    }

    func withCursorTyped<R>(_ table: LMDBTable, _ body: (LMDBCursor) throws(StorageError) -> R) throws(StorageError) -> R {
        let cursor = try openCursor(table)
        defer { cursor.close() }
        return try body(cursor)
    }

    private func openCursor(_ table: LMDBTable) throws(StorageError) -> LMDBCursor {
        var cursor: OpaquePointer?
        let rc = mdb_cursor_open(try txnHandle(), try dbi(table), &cursor)
        guard rc == 0, let cursor else { throw failure(rc, "mdb_cursor_open(\(table.name))") }
        return LMDBCursor(transaction: self, table: table, handle: cursor)
    }

    /// Orders two keys as `table` does (`mdb_cmp`): negative, zero or positive.
    func compare(_ table: LMDBTable, _ a: some ContiguousBytes, _ b: some ContiguousBytes) throws(StorageError) -> Int32 {
        let txn = try txnHandle()
        let dbi = try ownDBI(table)
        return a.withUnsafeBytes { aBytes in
            b.withUnsafeBytes { bBytes in
                var aVal = MDB_val(mv_size: aBytes.count, mv_data: UnsafeMutableRawPointer(mutating: aBytes.baseAddress))
                var bVal = MDB_val(mv_size: bBytes.count, mv_data: UnsafeMutableRawPointer(mutating: bBytes.baseAddress))
                return mdb_cmp(txn, dbi, &aVal, &bVal)
            }
        }
    }
}

@available(*, unavailable, message: "transactions are confined to their closure and thread")
extension LMDBReadTransaction: Sendable {}
