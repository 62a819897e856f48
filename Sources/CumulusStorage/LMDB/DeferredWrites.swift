import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Puts and deletes that a write transaction holds back, per table, and writes sorted
/// through one cursor (``LMDBWriteTransaction/deferPut(_:key:value:)``): index entries
/// (empty values), and entries whose small values ride along (a record's by-type entry,
/// which keeps its words).
///
/// **Why.** Index entries of a batch of records land all over a table. Written as they
/// come, each put descends the B-tree from the root and dirties a page in random order;
/// written in key order through one cursor, LMDB finds most keys on the page the cursor
/// already holds (`mdb_cursor_set` checks the current leaf before descending), and an
/// empty table is loaded with `MDB_APPEND`, which fills pages left to right without a
/// search at all.
///
/// **Meaning.** The outcome is exactly that of the same operations done in order: the
/// last operation on a key wins. A table's pending operations are written before
/// anything else uses that table through the transaction (a get, count, put, delete,
/// clear, or the opening of a cursor or scan goes through `dbi(_:)`, which writes
/// them), and before the transaction commits, so no reader — in or after the
/// transaction — can tell. The exception: a cursor already open on the table does not
/// see writes deferred after it opened (its moves do not write them).
/// `LMDBWriteTransaction.deferPut` says so to its callers.
///
/// **Posting blocks.** A table opened with a ``PostingLayout`` takes one logical key per
/// posting; its sorted operations are merged into the blocks of each group instead
/// (``PostingMerger``), with the same outcome as if each logical key were an entry.
///
/// **Layout.** Keys, each followed by its value, are kept end to end in one byte array,
/// each operation an offset, the key's and the value's lengths and a kind: one
/// allocation per table instead of one per key.
///
/// **Reuse.** A table's buffers, once written, are emptied and kept for the next table
/// that defers a write, and the environment hands the whole value from one write
/// transaction to the next (``reusable()``). Grown afresh each time, the buffers of a
/// 100,000-record cascade were moved at every doubling and their new pages zeroed by
/// the kernel: page faults (with `clear_page`) and `memmove` were a sixth of its profile;
/// a group of saves paid the same at its own scale on every commit.
///
/// **A value held in place.** The transaction stores it and appends to it in place, as
/// one access to its own property. As a class it was retained and released around
/// every deferred key, to keep it alive while it was changed: with the array passed
/// to `append(contentsOf:)`, which takes its argument owned, a quarter of what
/// deferring a key cost in a replay.
///
/// Owned by one write transaction at a time, on its thread (the environment keeps it
/// between transactions under its writer lock).
struct DeferredWrites {
    /// Pending operations above this many key bytes in one table are written at once:
    /// a transaction that touches millions of keys (an index build over a large type,
    /// a cascade) keeps a bounded buffer, at the price of more, still sorted, passes.
    /// 4 MiB, not the 32 MiB it was: a 100,000-record cascade's deletes (tens of
    /// megabytes of keys) then run through one buffer refilled in place, not through
    /// fresh pages the kernel must zero; the cascade took 9–11 % less time (two
    /// alternating pairs, eleventh session), and 2 MiB did no better.
    static let defaultFlushThreshold = 4 << 20

    struct Operation {
        /// Sixteen key bytes past the prefix every pending key of the table shares, as
        /// two big-endian numbers (zero-padded), set when the table is written: most
        /// comparisons of its sort end here. Eight were not enough: a token entry's
        /// word and terminator often fill them, and the creation time after them,
        /// which tells most entries of one word apart, then went to `memcmp` (a
        /// tenth of a 100,000-record cascade's profile).
        var head: UInt64 = 0
        var head2: UInt64 = 0
        var start: UInt32
        var length: UInt16
        var isPut: Bool
        /// The value's bytes follow the key's (a put's; a delete's is 0).
        var valueLength: UInt32 = 0
    }

    struct Pending {
        var table: LMDBTable
        var bytes: [UInt8] = []
        var operations: [Operation] = []
    }

    /// Emptied buffers kept past a transaction are at most this large each: a cascade's,
    /// grown to their flush size, are returned to the system, a group of saves' are kept.
    static let retainedCapacity = 4 << 20

    /// Tables with pending operations; few (two index tables), so a linear search.
    private(set) var pending: [Pending] = []
    /// The table of the previous `add`: runs of keys go to one table.
    private var last = 0
    /// Emptied buffers of tables already written, for the next table to fill.
    private var spare: [Pending] = []

    /// Nothing pending and no buffers.
    init() {}

    var isEmpty: Bool { pending.isEmpty }

    /// Whether emptied buffers are kept for the next table (or transaction) to fill.
    var hasSpareBuffers: Bool { !spare.isEmpty }

    /// Buffers for `table`: emptied ones kept from an earlier write when there are any.
    private mutating func buffers(for table: LMDBTable) -> Pending {
        guard var reused = spare.popLast() else { return Pending(table: table) }
        reused.table = table
        return reused
    }

    /// Keeps `work`'s buffers, emptied, for a later table (`work` was written).
    mutating func recycle(_ work: consuming Pending) {
        var work = work
        work.bytes.removeAll(keepingCapacity: true)
        work.operations.removeAll(keepingCapacity: true)
        spare.append(work)
    }

    /// These buffers ready for the next transaction, or `nil` if there are none worth
    /// keeping: anything still pending (an aborted transaction's) is dropped, its
    /// buffers kept, and buffers above ``retainedCapacity`` are let go.
    mutating func reusable() -> DeferredWrites? {
        for work in takeAll() { recycle(work) }
        last = 0
        spare.removeAll { work in
            work.bytes.capacity > Self.retainedCapacity
                || work.operations.capacity * MemoryLayout<Operation>.stride > Self.retainedCapacity
        }
        return spare.isEmpty ? nil : self
    }

    /// Records one operation (`value` only with a put); returns whether the table's
    /// buffer reached `threshold` bytes.
    mutating func add(_ table: LMDBTable, key: [UInt8], value: UnsafeRawBufferPointer? = nil, isPut: Bool, threshold: Int) -> Bool {
        let index: Int
        if last < pending.count, pending[last].table.dbi == table.dbi {
            index = last
        } else if let found = pending.firstIndex(where: { $0.table.dbi == table.dbi }) {
            index = found
        } else {
            pending.append(buffers(for: table))
            index = pending.count - 1
        }
        last = index
        return Self.append(key, value: value, isPut: isPut, threshold: threshold, to: &pending[index])
    }

    /// Appends one operation to `work`: one access to the table's buffers for all of it.
    private static func append(
        _ key: [UInt8], value: UnsafeRawBufferPointer?, isPut: Bool, threshold: Int, to work: inout Pending
    ) -> Bool {
        let valueCount = value?.count ?? 0
        if work.bytes.capacity - work.bytes.count < key.count + valueCount {
            grow(&work, toAdd: key.count + valueCount, threshold: threshold)
        }
        let start = UInt32(work.bytes.count)
        // Through a raw buffer: `append(contentsOf:)` takes its argument owned, so
        // passing the array itself cost a retain and a release per key.
        key.withUnsafeBytes { work.bytes.append(contentsOf: $0) }
        if let value { work.bytes.append(contentsOf: value) }
        work.operations.append(
            Operation(start: start, length: UInt16(key.count), isPut: isPut, valueLength: UInt32(valueCount)))
        return work.bytes.count >= threshold
    }

    /// Pending bytes past which a table's buffers grow straight to their flush size.
    static let growthJumpBytes = 1 << 20

    /// Makes room for `count` more key bytes. Small buffers double as arrays do; past
    /// ``growthJumpBytes`` they are sized at once for everything the table can hold
    /// before it is written (`threshold`, and the operations in proportion): growing a
    /// cascade's buffers by doublings to 32 MB copied each one four more times and had
    /// the kernel zero every new page, a sixth of the cascade. Pages of the reserved
    /// size that are never filled are never touched, so cost nothing.
    private static func grow(_ work: inout Pending, toAdd count: Int, threshold: Int) {
        let needed = work.bytes.count + count
        guard needed > growthJumpBytes, threshold > needed else { return }
        let target = threshold + Int(UInt16.max)
        work.bytes.reserveCapacity(target)
        let perOperation = max(1, work.bytes.count / max(1, work.operations.count))
        work.operations.reserveCapacity(target / perOperation + work.operations.count / 8)
    }

    /// Removes and returns the pending operations of `table`.
    mutating func take(_ table: LMDBTable) -> Pending? {
        guard let index = pending.firstIndex(where: { $0.table.dbi == table.dbi }) else { return nil }
        return pending.remove(at: index)
    }

    /// Removes and returns everything pending.
    mutating func takeAll() -> [Pending] {
        defer { pending = [] }
        return pending
    }

    /// Writes `work` through one cursor, in key order, the last operation on each key
    /// winning. `empty` says the table holds no entries, so puts can append and
    /// deletes have nothing to remove. Sorts `work`'s operations in place.
    /// A table of posting blocks (``LMDBTable/postings``) has its operations merged
    /// into its blocks (``PostingMerger``).
    static func write(_ work: inout Pending, txn: OpaquePointer, empty: Bool) throws(StorageError) {
        let table = work.table
        let outcome = work.bytes.withUnsafeBufferPointer { bytes -> Result<Void, StorageError> in
            // In place: a copy of a cascade's operations to sort was megabytes.
            work.operations.withUnsafeMutableBufferPointer { operations -> Result<Void, StorageError> in
                guard let base = bytes.baseAddress, !operations.isEmpty else { return .success(()) }
                sort(operations, base)
                if let layout = table.postings {
                    return Result { () throws(StorageError) in
                        try PostingMerger.write(operations, base, table: table, layout: layout, txn: txn)
                    }
                }
                if let (code, operation) = writeSorted(operations, base, table: table, txn: txn, empty: empty) {
                    return .failure(.lmdb(code, operation))
                }
                return .success(())
            }
        }
        try outcome.get()
    }

    /// Writes sorted `operations` through one cursor.
    ///
    /// A delete right after a delete first looks at the entry the cursor now rests on
    /// (`MDB_NEXT` after `mdb_cursor_del` returns the entry that followed the deleted
    /// one, without moving): when the keys being deleted are neighbours in the table,
    /// as a cascade's are (every entry of a word whose records all go), that entry is
    /// the next key, and the delete needs no search of the page. Any other entry is
    /// compared, found different, and the key searched for as before.
    private static func writeSorted(
        _ operations: UnsafeMutableBufferPointer<Operation>, _ base: UnsafePointer<UInt8>, table: LMDBTable,
        txn: OpaquePointer, empty: Bool
    ) -> (code: Int32, operation: String)? {
        var cursor: OpaquePointer?
        let opened = mdb_cursor_open(txn, table.dbi, &cursor)
        guard opened == 0, let cursor else { return (opened, "mdb_cursor_open(\(table.name))") }
        defer { mdb_cursor_close(cursor) }
        var justDeleted = false
        var index = 0
        while index < operations.count {
            // The last operation of a run of equal keys decides.
            var runEnd = index
            // Different heads are different keys: most neighbours end there.
            while runEnd + 1 < operations.count, operations[runEnd + 1].length == operations[index].length,
                operations[runEnd + 1].head == operations[index].head,
                operations[runEnd + 1].head2 == operations[index].head2,
                memcmp(base + Int(operations[runEnd + 1].start), base + Int(operations[index].start),
                       Int(operations[index].length)) == 0
            {
                runEnd += 1
            }
            let operation = operations[runEnd]
            index = runEnd + 1
            let keyStart = UnsafeMutableRawPointer(mutating: base + Int(operation.start))
            var key = MDB_val(mv_size: Int(operation.length), mv_data: keyStart)
            var value = MDB_val(mv_size: 0, mv_data: nil)
            if operation.isPut {
                justDeleted = false
                var stored = MDB_val(
                    mv_size: Int(operation.valueLength),
                    mv_data: operation.valueLength == 0 ? nil : keyStart + Int(operation.length))
                let rc = mdb_cursor_put(cursor, &key, &stored, empty ? UInt32(MDB_APPEND) : 0)
                guard rc == 0 else { return (rc, "mdb_cursor_put(\(table.name))") }
            } else if !empty {
                var atKey = false
                if justDeleted {
                    var current = MDB_val(mv_size: 0, mv_data: nil)
                    let next = mdb_cursor_get(cursor, &current, &value, MDB_NEXT)
                    guard next == 0 || next == MDB_NOTFOUND else { return (next, "mdb_cursor_get(\(table.name))") }
                    atKey = next == 0 && current.mv_size == key.mv_size
                        && (key.mv_size == 0 || memcmp(current.mv_data, keyStart, key.mv_size) == 0)
                }
                if !atKey {
                    let found = mdb_cursor_get(cursor, &key, &value, MDB_SET)
                    if found == MDB_NOTFOUND {
                        justDeleted = false
                        continue
                    }
                    guard found == 0 else { return (found, "mdb_cursor_get(\(table.name))") }
                }
                let rc = mdb_cursor_del(cursor, 0)
                guard rc == 0 else { return (rc, "mdb_cursor_del(\(table.name))") }
                justDeleted = true
            }
        }
        return nil
    }
}
