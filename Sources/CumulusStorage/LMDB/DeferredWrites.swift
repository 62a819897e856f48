import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Puts and deletes of empty-valued keys that a write transaction holds back, per
/// table, and writes sorted through one cursor (``LMDBWriteTransaction/deferPut(_:key:)``).
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
/// **Layout.** Keys are kept end to end in one byte array, each operation an offset,
/// a length and a kind: one allocation per table instead of one per key.
///
/// Not thread-safe: owned by one write transaction, on its thread.
final class DeferredWrites {
    /// Pending operations above this many key bytes in one table are written at once:
    /// a transaction that touches millions of keys (an index build over a large type)
    /// keeps a bounded buffer, at the price of a second, still sorted, pass.
    static let defaultFlushThreshold = 32 << 20

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
    }

    struct Pending {
        var table: LMDBTable
        var bytes: [UInt8] = []
        var operations: [Operation] = []
    }

    /// Tables with pending operations; few (two index tables), so a linear search.
    private(set) var pending: [Pending] = []
    /// The table of the previous `add`: runs of keys go to one table.
    private var last = 0

    var isEmpty: Bool { pending.isEmpty }

    /// Records one operation; returns whether the table's buffer reached `threshold` bytes.
    func add(_ table: LMDBTable, key: UnsafeRawBufferPointer, isPut: Bool, threshold: Int) -> Bool {
        let index: Int
        if last < pending.count, pending[last].table.dbi == table.dbi {
            index = last
        } else if let found = pending.firstIndex(where: { $0.table.dbi == table.dbi }) {
            index = found
        } else {
            pending.append(Pending(table: table))
            index = pending.count - 1
        }
        last = index
        let start = UInt32(pending[index].bytes.count)
        pending[index].bytes.append(contentsOf: key)
        pending[index].operations.append(Operation(start: start, length: UInt16(key.count), isPut: isPut))
        return pending[index].bytes.count >= threshold
    }

    /// Removes and returns the pending operations of `table`.
    func take(_ table: LMDBTable) -> Pending? {
        guard let index = pending.firstIndex(where: { $0.table.dbi == table.dbi }) else { return nil }
        return pending.remove(at: index)
    }

    /// Removes and returns everything pending.
    func takeAll() -> [Pending] {
        defer { pending = [] }
        return pending
    }

    /// How many leading bytes every key of `operations` shares with the first.
    private static func sharedPrefix(_ operations: [Operation], _ base: UnsafePointer<UInt8>) -> Int {
        guard let first = operations.first else { return 0 }
        var shared = Int(first.length)
        for operation in operations.dropFirst() where shared > 0 {
            let limit = min(shared, Int(operation.length))
            var index = 0
            while index < limit, base[Int(first.start) + index] == base[Int(operation.start) + index] { index += 1 }
            shared = index
        }
        return shared
    }

    /// Writes `work` through one cursor, in key order, the last operation on each key
    /// winning. `empty` says the table holds no entries, so puts can append and
    /// deletes have nothing to remove.
    static func write(_ work: Pending, txn: OpaquePointer, empty: Bool) -> (code: Int32, operation: String)? {
        var operations = work.operations
        return work.bytes.withUnsafeBufferPointer { bytesBuffer -> (Int32, String)? in
            guard let base = bytesBuffer.baseAddress else { return nil }
            // Index keys of one table share their zone and type prefix: order by the
            // sixteen bytes after what all share, and compare the rest only on a tie.
            let shared = sharedPrefix(operations, base)
            func word(_ start: Int, _ end: Int) -> UInt64 {
                var value: UInt64 = 0
                var shift: UInt64 = 56
                var position = start
                while position < end {
                    value |= UInt64(base[position]) << shift
                    shift &-= 8
                    position += 1
                }
                return value
            }
            for index in operations.indices {
                let start = Int(operations[index].start) + shared
                let end = Int(operations[index].start) + Int(operations[index].length)
                operations[index].head = word(start, min(end, start + 8))
                operations[index].head2 = word(min(end, start + 8), min(end, start + 16))
            }
            // Past the heads, LMDB's default order: memcmp over the shorter length, then
            // the shorter first (a key that ends within its heads is a prefix of the
            // other). Equal keys keep their order of arrival (the offsets grow with
            // it), so the last of a run is the operation that wins. A zero-padded head
            // ties with a real zero byte; the full compare decides.
            let past = shared + 16
            operations.sort { a, b in
                if a.head != b.head { return a.head < b.head }
                if a.head2 != b.head2 { return a.head2 < b.head2 }
                // Equal heads: the first `past` bytes are equal as far as both keys go.
                let common = Int(min(a.length, b.length)) - past
                if common > 0 {
                    let order = memcmp(base + Int(a.start) + past, base + Int(b.start) + past, common)
                    if order != 0 { return order < 0 }
                }
                if a.length != b.length { return a.length < b.length }
                return a.start < b.start
            }
            var cursor: OpaquePointer?
            let opened = mdb_cursor_open(txn, work.table.dbi, &cursor)
            guard opened == 0, let cursor else { return (opened, "mdb_cursor_open(\(work.table.name))") }
            defer { mdb_cursor_close(cursor) }
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
                var key = MDB_val(
                    mv_size: Int(operation.length), mv_data: UnsafeMutableRawPointer(mutating: base + Int(operation.start)))
                var value = MDB_val(mv_size: 0, mv_data: nil)
                if operation.isPut {
                    let rc = mdb_cursor_put(cursor, &key, &value, empty ? UInt32(MDB_APPEND) : 0)
                    guard rc == 0 else { return (rc, "mdb_cursor_put(\(work.table.name))") }
                } else if !empty {
                    let found = mdb_cursor_get(cursor, &key, &value, MDB_SET)
                    if found == MDB_NOTFOUND { continue }
                    guard found == 0 else { return (found, "mdb_cursor_get(\(work.table.name))") }
                    let rc = mdb_cursor_del(cursor, 0)
                    guard rc == 0 else { return (rc, "mdb_cursor_del(\(work.table.name))") }
                }
            }
            return nil
        }
    }
}
