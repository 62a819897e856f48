import CLMDB

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The single write transaction of an `LMDBEnvironment`, passed to `write`'s body.
///
/// Everything an `LMDBReadTransaction` does (reads see this transaction's own uncommitted
/// changes), plus changes. Same lifetime rules: valid only while the body runs, not
/// `Sendable`, buffers valid only until the next change or the end of the body.
///
/// Changes become visible to other transactions when the body returns and the commit
/// succeeds; if the body throws, all of them are discarded. After an LMDB error other
/// than `.emptyKey`/`.keyTooLarge`/`.valueTooLarge`, not-found and key-exists, LMDB
/// refuses further use of the transaction: let the error propagate out of the body.
public final class LMDBWriteTransaction: LMDBReadTransaction {
    /// Options for `put`, mapping to LMDB's `mdb_put` flags.
    public struct PutFlags: OptionSet, Sendable, Hashable {
        /// LMDB's `mdb_put` flag bits.
        public let rawValue: UInt32
        /// Flags from LMDB bits; only the documented ones are meaningful.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Store only if the key is absent (`MDB_NOOVERWRITE`); `put` returns `false` otherwise.
        public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
        /// `.dupSort` only: store only if this exact key/value pair is absent
        /// (`MDB_NODUPDATA`); `put` returns `false` otherwise.
        public static let noDupData = PutFlags(rawValue: UInt32(MDB_NODUPDATA))
        /// The key is greater than every key in the table (`MDB_APPEND`): a fast path for
        /// sequential loads such as a log. A key out of order throws (`isKeyExists`), or
        /// makes `put` return `false` when combined with `.noOverwrite`.
        public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
        /// `.dupSort` only: the value is greater than every value under its key (`MDB_APPENDDUP`).
        public static let appendDup = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
    }

    /// Stores `value` under `key`, replacing the existing value (in a plain table) or
    /// adding another value (in a `.dupSort` table).
    ///
    /// - Returns: `false` only when `.noOverwrite` or `.noDupData` is set and LMDB refused
    ///   to store: the key (or pair) exists, or, combined with `.append`/`.appendDup`, the
    ///   key does not sort after the last one. The transaction remains usable.
    /// - Throws: `.emptyKey`, `.keyTooLarge`, `.valueTooLarge` (dupSort values above the
    ///   maximum key size) before calling LMDB; `.lmdb` otherwise (the map filling up is
    ///   handled by `LMDBEnvironment.write`).
    @discardableResult
    public func put(
        _ table: LMDBTable, key: some ContiguousBytes, value: some ContiguousBytes, flags: PutFlags = []
    ) throws(StorageError) -> Bool {
        let txn = try txnHandle()
        let dbi = try dbi(table)
        let outcome: Result<Int32, StorageError> = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                if let error = environment.keyError(keyBytes.count) { return .failure(error) }
                if table.isDupSort, valueBytes.count > environment.maxKeySize {
                    return .failure(.valueTooLarge(valueBytes.count))
                }
                var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var valueVal = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                return .success(mdb_put(txn, dbi, &keyVal, &valueVal, flags.rawValue))
            }
        }
        return try storeResult(try outcome.get(), flags, table)
    }

    /// Reserves `count` bytes for the value under `key` and lets `fill` write them in
    /// place (`MDB_RESERVE`), saving a copy for large values such as compressed frames.
    ///
    /// `fill` must initialize all `count` bytes and must not keep the buffer. Not
    /// available on `.dupSort` tables. Returns `false` if `.noOverwrite` refused.
    @discardableResult
    public func reserve(
        _ table: LMDBTable, key: some ContiguousBytes, count: Int, flags: PutFlags = [],
        _ fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(StorageError) -> Bool {
        guard !table.isDupSort else { throw .invalidArgument("reserve is not supported on dupSort tables") }
        guard count >= 0 else { throw .invalidArgument("negative reserve size") }
        let txn = try txnHandle()
        let dbi = try dbi(table)
        let outcome: Result<(Int32, MDB_val), StorageError> = key.withUnsafeBytes { keyBytes in
            if let error = environment.keyError(keyBytes.count) { return .failure(error) }
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            var valueVal = MDB_val(mv_size: count, mv_data: nil)
            let rc = mdb_put(txn, dbi, &keyVal, &valueVal, flags.rawValue | UInt32(MDB_RESERVE))
            return .success((rc, valueVal))
        }
        let (rc, valueVal) = try outcome.get()
        guard try storeResult(rc, flags, table) else { return false }
        fill(UnsafeMutableRawBufferPointer(start: valueVal.mv_data, count: count))
        return true
    }

    private func storeResult(_ rc: Int32, _ flags: PutFlags, _ table: LMDBTable) throws(StorageError) -> Bool {
        if rc == 0 { return true }
        // LMDB returns KEYEXIST before modifying anything, so the transaction stays usable.
        // Without a no-overwrite flag the caller did not ask for a refusal signal: an
        // out-of-order `.append` is then an error.
        if rc == MDB_KEYEXIST, !flags.isDisjoint(with: [.noOverwrite, .noDupData]) {
            return false
        }
        throw failure(rc, "mdb_put(\(table.name))")
    }

    /// Deletes `key` and, in a `.dupSort` table, all its values.
    /// - Returns: `false` if the key was absent.
    @discardableResult
    public func delete(_ table: LMDBTable, key: some ContiguousBytes) throws(StorageError) -> Bool {
        try delete(table, key: key, value: nil as [UInt8]?)
    }

    /// Deletes one key/value pair of a `.dupSort` table (in a plain table: deletes `key`
    /// only if its value equals `value`).
    /// - Returns: `false` if the pair was absent.
    @discardableResult
    public func delete(_ table: LMDBTable, key: some ContiguousBytes, value: some ContiguousBytes) throws(StorageError) -> Bool {
        try delete(table, key: key, value: Optional(value))
    }

    private func delete<V: ContiguousBytes>(_ table: LMDBTable, key: some ContiguousBytes, value: V?) throws(StorageError) -> Bool {
        if !table.isDupSort, let value {
            // mdb_del ignores the value for plain tables; honour the documented meaning.
            guard let stored = try rawValue(table, key: key) else { return false }
            let equal = value.withUnsafeBytes { $0.elementsEqual(stored) }
            guard equal else { return false }
            return try delete(table, key: key, value: nil as V?)
        }
        let txn = try txnHandle()
        let dbi = try dbi(table)
        let outcome: Result<Int32, StorageError> = key.withUnsafeBytes { keyBytes in
            if let error = environment.keyError(keyBytes.count) { return .failure(error) }
            var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
            guard let value else { return .success(mdb_del(txn, dbi, &keyVal, nil)) }
            return value.withUnsafeBytes { valueBytes in
                var valueVal = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                return .success(mdb_del(txn, dbi, &keyVal, &valueVal))
            }
        }
        let rc = try outcome.get()
        switch rc {
        case 0: return true
        case MDB_NOTFOUND: return false
        default: throw failure(rc, "mdb_del(\(table.name))")
        }
    }

    // MARK: Deferred writes

    /// Key bytes held back per table before they are written anyway (tests lower it).
    var deferredFlushThreshold = DeferredWrites.defaultFlushThreshold

    /// Stores `key` with an empty value in a plain table — later: held back with the
    /// transaction's other deferred writes to `table` and written in key order through
    /// one cursor (with `MDB_APPEND` into an empty table) when anything next uses
    /// `table` or the transaction commits. The outcome is that of a `put` now; only the
    /// cost differs, for batches of keys scattered over a large table (index entries).
    ///
    /// Key errors (`.emptyKey`, `.keyTooLarge`) are thrown here; LMDB's own errors when
    /// the writes happen, from whatever call triggered them (or from the commit). A
    /// deferred write counts as a change when it is written: buffers from `withValue`
    /// and cursors end their validity then, as for any change — and a read of `table`
    /// (`get`, `contains`, `count`, opening a cursor or a scan) may be what writes it.
    ///
    /// A cursor or scan already open on `table` does not see writes deferred after it
    /// opened (its moves do not write them): do not defer writes to a table while
    /// iterating it.
    ///
    /// In a table of posting blocks (``LMDBTable/postings``) `key` is a logical key, group
    /// ‖ posting (`.invalidArgument` if it has no group), merged into the group's blocks
    /// when written (``PostingMerger``).
    public func deferPut(_ table: LMDBTable, key: [UInt8]) throws(StorageError) {
        try deferWrite(table, key: key, isPut: true)
    }

    /// Stores `key` with `value` in a plain table, deferred as ``deferPut(_:key:)`` is:
    /// for entries whose values are small and written with many others (a record's
    /// by-type entry). Not for a table of posting blocks, whose entries are keys alone.
    public func deferPut(_ table: LMDBTable, key: [UInt8], value: [UInt8]) throws(StorageError) {
        guard table.postings == nil || value.isEmpty else {
            throw .invalidArgument("\(table.name) keeps postings, which carry no values")
        }
        if value.isEmpty { return try deferWrite(table, key: key, isPut: true) }
        guard value.count <= Int(UInt32.max) else { throw .invalidArgument("a deferred value of \(value.count) bytes") }
        let outcome: Result<Void, StorageError> = value.withUnsafeBytes { valueBytes in
            Result { () throws(StorageError) in try deferWrite(table, key: key, value: valueBytes, isPut: true) }
        }
        try outcome.get()
    }

    /// Deletes `key` from a plain table, deferred as ``deferPut(_:key:)`` is; deleting an
    /// absent key is no error.
    public func deferDelete(_ table: LMDBTable, key: [UInt8]) throws(StorageError) {
        try deferWrite(table, key: key, isPut: false)
    }

    private func deferWrite(
        _ table: LMDBTable, key: [UInt8], value: UnsafeRawBufferPointer? = nil, isPut: Bool
    ) throws(StorageError) {
        // Called once per index key: millions in a large cascade, fifteen per record
        // in a replay's token merges. Concrete `[UInt8]`, not `some ContiguousBytes`: a
        // generic call through the protocol witness showed in the profile.
        _ = try txnHandle()
        _ = try ownDBI(table)
        guard !table.isDupSort else { throw .invalidArgument("deferred writes are for plain tables, not \(table.name)") }
        if let error = environment.keyError(key.count) { throw error }
        if let layout = table.postings, key.withUnsafeBytes({ layout.groupLength($0) }) == nil {
            throw .invalidArgument("\(table.name) takes group ‖ posting keys; this one has no posting group")
        }
        if deferred.add(table, key: key, value: value, isPut: isPut, threshold: deferredFlushThreshold),
            let work = deferred.take(table)
        {
            try writeDeferred(work)
        }
    }

    /// Writes everything held back; `LMDBEnvironment.write` calls it before committing.
    /// A body calls it itself when something must follow the transaction's last write
    /// but precede its commit (the log's commit, before the views' that derive from it).
    public func writeAllDeferred() throws(StorageError) {
        guard !deferred.isEmpty else { return }
        for work in deferred.takeAll() { try writeDeferred(work) }
    }

    /// Deletes every entry of `table`, keeping the table itself (`mdb_drop(…, 0)`).
    /// Handles stay valid. Tables are never deleted outright, so a cached `LMDBTable`
    /// can never come to name a different table.
    public func clear(_ table: LMDBTable) throws(StorageError) {
        let rc = mdb_drop(try txnHandle(), try dbi(table), 0)
        guard rc == 0 else { throw failure(rc, "mdb_drop(\(table.name))") }
    }
}
