import CLMDB

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A position in one table of one transaction, for walking entries in key order.
///
/// Obtained only through `LMDBReadTransaction.withCursor`, and closed when that closure
/// returns; afterwards every method throws `.invalidArgument`. Not `Sendable`.
///
/// Each move returns the entry it lands on, or `nil` if there is none (the end of the
/// table, no such key, no further duplicate). An `Entry`'s buffers point into the memory
/// map: valid until the transaction ends, and in a write transaction only until the
/// next change to the database. Copy what you keep.
public final class LMDBCursor {
    /// A key/value pair pointing into the memory map; see `LMDBCursor` for lifetime.
    public struct Entry {
        /// The stored key (never empty).
        public let key: UnsafeRawBufferPointer
        /// The stored value (possibly empty).
        public let value: UnsafeRawBufferPointer
    }

    /// The table this cursor walks.
    public let table: LMDBTable
    private let transaction: LMDBReadTransaction
    private var handle: OpaquePointer?

    init(transaction: LMDBReadTransaction, table: LMDBTable, handle: OpaquePointer) {
        self.transaction = transaction
        self.table = table
        self.handle = handle
    }

    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
    }

    /// The lowest entry.
    public func first() throws(StorageError) -> Entry? { try move(MDB_FIRST) }
    /// The highest entry.
    public func last() throws(StorageError) -> Entry? { try move(MDB_LAST) }
    /// The next entry (the first one if the cursor is not yet positioned).
    public func next() throws(StorageError) -> Entry? { try move(MDB_NEXT) }
    /// The previous entry (the last one if the cursor is not yet positioned).
    public func previous() throws(StorageError) -> Entry? { try move(MDB_PREV) }
    /// The entry the cursor is on.
    public func current() throws(StorageError) -> Entry? { try move(MDB_GET_CURRENT) }
    /// The first entry of the next key, skipping remaining duplicates of this one.
    public func nextKey() throws(StorageError) -> Entry? { try move(MDB_NEXT_NODUP) }
    /// The last entry of the previous key.
    public func previousKey() throws(StorageError) -> Entry? { try move(MDB_PREV_NODUP) }
    /// The next value under the current key (`.dupSort` tables).
    public func nextDuplicate() throws(StorageError) -> Entry? { try move(MDB_NEXT_DUP) }
    /// The previous value under the current key (`.dupSort` tables).
    public func previousDuplicate() throws(StorageError) -> Entry? { try move(MDB_PREV_DUP) }
    /// The last value under the current key (`.dupSort` tables).
    public func lastDuplicate() throws(StorageError) -> Entry? { try move(MDB_LAST_DUP) }

    /// The first entry whose key is `>= key` (`MDB_SET_RANGE`).
    public func seek(atOrAfter key: some ContiguousBytes) throws(StorageError) -> Entry? {
        try move(MDB_SET_RANGE, key: key)
    }

    /// The entry whose key is exactly `key` (its first value in `.dupSort` tables).
    public func seek(to key: some ContiguousBytes) throws(StorageError) -> Entry? {
        try move(MDB_SET_KEY, key: key)
    }

    /// The entry whose key is `key` and whose value is exactly `value`
    /// (`MDB_GET_BOTH`; `.dupSort` tables), or `nil`.
    public func seek(to key: some ContiguousBytes, value: some ContiguousBytes) throws(StorageError) -> Entry? {
        let cursor = try cursorHandle()
        let outcome: Result<Entry?, StorageError> = key.withUnsafeBytes { keyBytes in
            if let error = transaction.environment.keyError(keyBytes.count) { return .failure(error) }
            return value.withUnsafeBytes { valueBytes in
                var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var valueVal = MDB_val(
                    mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                // On success LMDB points both at the stored bytes, so nothing refers to
                // the arguments once these closures return.
                return Result { () throws(StorageError) in
                    try finish(mdb_cursor_get(cursor, &keyVal, &valueVal, MDB_GET_BOTH), keyVal, valueVal)
                }
            }
        }
        return try outcome.get()
    }

    /// Number of values under the current key (1 for plain tables).
    public func duplicateCount() throws(StorageError) -> Int {
        guard table.isDupSort else { return try current() == nil ? 0 : 1 }
        var count = 0
        let rc = mdb_cursor_count(try cursorHandle(), &count)
        guard rc == 0 else { throw transaction.failure(rc, "mdb_cursor_count(\(table.name))") }
        return count
    }

    private func cursorHandle() throws(StorageError) -> OpaquePointer {
        guard let handle else { throw .invalidArgument("cursor used after its closure returned") }
        return handle
    }

    private func move(_ op: MDB_cursor_op) throws(StorageError) -> Entry? {
        var key = MDB_val()
        var value = MDB_val()
        return try finish(mdb_cursor_get(try cursorHandle(), &key, &value, op), key, value)
    }

    private func move(_ op: MDB_cursor_op, key: some ContiguousBytes) throws(StorageError) -> Entry? {
        let cursor = try cursorHandle()
        let outcome: Result<Entry?, StorageError> = key.withUnsafeBytes { keyBytes in
            if let error = transaction.environment.keyError(keyBytes.count) { return .failure(error) }
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var value = MDB_val()
            // On success LMDB points keyVal at the stored key, so nothing refers to
            // `keyBytes` once this closure returns.
            return Result { () throws(StorageError) in
                try finish(mdb_cursor_get(cursor, &keyVal, &value, op), keyVal, value)
            }
        }
        return try outcome.get()
    }

    private func finish(_ rc: Int32, _ key: MDB_val, _ value: MDB_val) throws(StorageError) -> Entry? {
        switch rc {
        case 0:
            return Entry(
                key: UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size),
                value: UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
        case MDB_NOTFOUND:
            return nil
        default:
            throw transaction.failure(rc, "mdb_cursor_get(\(table.name))")
        }
    }
}

@available(*, unavailable, message: "cursors are confined to their transaction's closure")
extension LMDBCursor: Sendable {}
