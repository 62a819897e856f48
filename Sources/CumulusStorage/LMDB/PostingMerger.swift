import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a table of posting blocks' deferred operations (``DeferredWrites``): each
/// group's sorted puts and deletes of postings merged into the blocks they fall in,
/// every touched block read once and written once.
///
/// A group's operations are taken block by block: the block holding the first
/// operation's posting is the last one whose first posting is not greater (or the
/// group's first block, for a posting before all of them); every operation before the
/// next block's first posting is merged into it; the result is written back in blocks
/// of up to ``PostingBlock/targetBytes``, under their first postings, the old key
/// deleted if the first posting changed, the block deleted if nothing is left. New
/// postings in creation order all land in a word's last block, so a batch writes one
/// block (two when it fills) per word.
///
/// Not thread-safe: used by one write transaction's flush, on its thread. Buffers from
/// LMDB are copied before anything is written, since a write may move the page under them.
struct PostingMerger {
    private let table: LMDBTable
    private let txn: OpaquePointer
    private let cursor: OpaquePointer
    /// The located block's key, its postings end to end and where each ends.
    private var blockKey: [UInt8] = []
    private var oldBytes: [UInt8] = []
    private var oldEnds: [Int] = []
    /// The key of the block after the located one in the same group, if any.
    private var nextKey: [UInt8] = []
    private var hasNext = false
    /// The block being built, its first posting's key, and the postings in it.
    private var block: [UInt8] = []
    private var newKey: [UInt8] = []
    private var blockPostings = 0
    private var firstWritten = false

    /// Writes the sorted operations of `table`, a table of posting blocks laid out by
    /// `layout`, group by group; of several operations on one key, the last wins.
    static func write(
        _ operations: UnsafeMutableBufferPointer<DeferredWrites.Operation>, _ base: UnsafePointer<UInt8>,
        table: LMDBTable, layout: PostingLayout, txn: OpaquePointer
    ) throws(StorageError) {
        var cursor: OpaquePointer?
        let opened = mdb_cursor_open(txn, table.dbi, &cursor)
        guard opened == 0, let cursor else { throw .lmdb(opened, "mdb_cursor_open(\(table.name))") }
        defer { mdb_cursor_close(cursor) }
        var merger = PostingMerger(table: table, txn: txn, cursor: cursor)
        var changes: [Change] = []
        var index = 0
        while index < operations.count {
            func key(_ operation: DeferredWrites.Operation) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(start: base + Int(operation.start), count: Int(operation.length))
            }
            let first = key(operations[index])
            // Checked when the write was deferred; a key without a group is not one.
            guard let groupLength = layout.groupLength(first) else {
                throw .invalidArgument("\(table.name): a key with no posting group")
            }
            changes.removeAll(keepingCapacity: true)
            while index < operations.count {
                let next = key(operations[index])
                guard next.count > groupLength,
                    compare(UnsafeRawBufferPointer(rebasing: next[..<groupLength]),
                            UnsafeRawBufferPointer(rebasing: first[..<groupLength])) == 0
                else { break }
                let change = Change(key: next, isPut: operations[index].isPut)
                // Equal keys sort in order of arrival: the last one stands.
                if let last = changes.last, compare(last.key, next) == 0 {
                    changes[changes.count - 1] = change
                } else {
                    changes.append(change)
                }
                index += 1
            }
            try merger.apply(changes, groupLength: groupLength)
        }
    }

    init(table: LMDBTable, txn: OpaquePointer, cursor: OpaquePointer) {
        self.table = table
        self.txn = txn
        self.cursor = cursor
    }

    /// One operation on a posting: its full logical key (group ‖ posting) and kind.
    struct Change {
        var key: UnsafeRawBufferPointer
        var isPut: Bool
    }

    /// Merges `changes` (sorted, one per key, all of the group of `groupLength` bytes
    /// that every key starts with) into the table.
    mutating func apply(_ changes: [Change], groupLength: Int) throws(StorageError) {
        guard let first = changes.first else { return }
        let group = UnsafeRawBufferPointer(rebasing: first.key[..<groupLength])
        var index = 0
        while index < changes.count {
            let located = try locate(changes[index].key, group: group)
            var end = index + 1
            if hasNext {
                while end < changes.count, Self.compare(changes[end].key, nextKey) < 0 { end += 1 }
            } else {
                end = changes.count
            }
            try merge(changes[index..<end], group: group, replacing: located)
            index = end
        }
    }

    /// Positions on the block `key`'s posting belongs in and copies it (its key, its
    /// postings and the next block's key of the group) into the buffers; returns
    /// whether there is one (`false`: the group has no block yet).
    private mutating func locate(_ key: UnsafeRawBufferPointer, group: UnsafeRawBufferPointer) throws(StorageError)
        -> Bool
    {
        var found = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var value = MDB_val()
        let seek = mdb_cursor_get(cursor, &found, &value, MDB_SET_RANGE)
        guard seek == 0 || seek == MDB_NOTFOUND else { throw .lmdb(seek, "mdb_cursor_get(\(table.name))") }
        var located = seek == 0 && Self.equal(found, key)
        if !located {
            // The block before, if it is the group's; else the group's first, if any.
            let after = seek == 0 && Self.hasPrefix(found, group)
            var back = MDB_val()
            var backValue = MDB_val()
            let stepped = mdb_cursor_get(cursor, &back, &backValue, seek == 0 ? MDB_PREV : MDB_LAST)
            guard stepped == 0 || stepped == MDB_NOTFOUND else { throw .lmdb(stepped, "mdb_cursor_get(\(table.name))") }
            if stepped == 0, Self.hasPrefix(back, group) {
                found = back
                value = backValue
                located = true
            } else if after {
                found = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                let again = mdb_cursor_get(cursor, &found, &value, MDB_SET_RANGE)
                guard again == 0 else { throw .lmdb(again, "mdb_cursor_get(\(table.name))") }
                located = true
            }
        }
        blockKey.removeAll(keepingCapacity: true)
        oldBytes.removeAll(keepingCapacity: true)
        oldEnds.removeAll(keepingCapacity: true)
        hasNext = false
        guard located else { return false }
        blockKey.append(contentsOf: UnsafeRawBufferPointer(start: found.mv_data, count: found.mv_size))
        do {
            try PostingBlock.forEach(
                UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size),
                key: UnsafeRawBufferPointer(start: found.mv_data, count: found.mv_size), groupLength: group.count
            ) {
                oldBytes.append(contentsOf: $0)
                oldEnds.append(oldBytes.count)
                return true
            }
        } catch {
            throw .corrupt("\(table.name) block \(blockKey.map { String($0, radix: 16) }.joined(separator: " ")): \(error)")
        }
        var next = MDB_val()
        var nextValue = MDB_val()
        let stepped = mdb_cursor_get(cursor, &next, &nextValue, MDB_NEXT)
        guard stepped == 0 || stepped == MDB_NOTFOUND else { throw .lmdb(stepped, "mdb_cursor_get(\(table.name))") }
        if stepped == 0, Self.hasPrefix(next, group) {
            nextKey.removeAll(keepingCapacity: true)
            nextKey.append(contentsOf: UnsafeRawBufferPointer(start: next.mv_data, count: next.mv_size))
            hasNext = true
        }
        return true
    }

    /// Merges `changes` into the located block's postings (none if `replacing` is
    /// false) and writes the result in its place.
    private mutating func merge(
        _ changes: ArraySlice<Change>, group: UnsafeRawBufferPointer, replacing: Bool
    ) throws(StorageError) {
        block.removeAll(keepingCapacity: true)
        blockPostings = 0
        firstWritten = false
        let old = oldBytes
        let ends = oldEnds
        let groupLength = group.count
        let outcome = old.withUnsafeBytes { oldPostings in Result { () throws(StorageError) in
            var previous: UnsafeRawBufferPointer?
            var oldIndex = 0
            var change = changes.startIndex
            func oldPosting(_ index: Int) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: oldPostings[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
            }
            while oldIndex < ends.count || change < changes.endIndex {
                let posting: UnsafeRawBufferPointer
                if change == changes.endIndex {
                    posting = oldPosting(oldIndex)
                    oldIndex += 1
                } else {
                    let changed = UnsafeRawBufferPointer(rebasing: changes[change].key[groupLength...])
                    let order = oldIndex == ends.count ? 1 : Self.compare(oldPosting(oldIndex), changed)
                    if order < 0 {
                        posting = oldPosting(oldIndex)
                        oldIndex += 1
                    } else {
                        if order == 0 { oldIndex += 1 }
                        let isPut = changes[change].isPut
                        change += 1
                        guard isPut else { continue }
                        posting = changed
                    }
                }
                try add(posting, after: &previous, group: group, replacing: replacing)
            }
            if blockPostings > 0 { try writeBlock(replacing: replacing) }
        } }
        try outcome.get()
        if !firstWritten, replacing {
            // Nothing left: the block goes.
            try delete(blockKey)
        }
    }

    /// Appends `posting` to the block being built, writing the block first if the
    /// posting would take it past its target size.
    private mutating func add(
        _ posting: UnsafeRawBufferPointer, after previous: inout UnsafeRawBufferPointer?, group: UnsafeRawBufferPointer,
        replacing: Bool
    ) throws(StorageError) {
        if blockPostings > 0, block.count + PostingBlock.maxEncodedSize(posting.count) > PostingBlock.targetBytes {
            try writeBlock(replacing: replacing)
            block.removeAll(keepingCapacity: true)
            blockPostings = 0
            previous = nil
        }
        if blockPostings == 0 {
            newKey.removeAll(keepingCapacity: true)
            newKey.append(contentsOf: group)
            newKey.append(contentsOf: posting)
        }
        PostingBlock.append(posting, after: previous, to: &block)
        blockPostings += 1
        previous = posting
    }

    /// Puts the block being built under its first posting's key; the first block
    /// written for a located block that began elsewhere deletes the old key.
    private mutating func writeBlock(replacing: Bool) throws(StorageError) {
        if !firstWritten {
            firstWritten = true
            if replacing, newKey != blockKey { try delete(blockKey) }
        }
        let rc = newKey.withUnsafeMutableBytes { key in
            block.withUnsafeMutableBytes { value in
                var k = MDB_val(mv_size: key.count, mv_data: key.baseAddress)
                var v = MDB_val(mv_size: value.count, mv_data: value.baseAddress)
                return mdb_put(txn, table.dbi, &k, &v, 0)
            }
        }
        guard rc == 0 else { throw .lmdb(rc, "mdb_put(\(table.name))") }
    }

    private func delete(_ key: [UInt8]) throws(StorageError) {
        var bytes = key
        let rc = bytes.withUnsafeMutableBytes { key in
            var k = MDB_val(mv_size: key.count, mv_data: key.baseAddress)
            return mdb_del(txn, table.dbi, &k, nil)
        }
        guard rc == 0 || rc == MDB_NOTFOUND else { throw .lmdb(rc, "mdb_del(\(table.name))") }
    }

    // MARK: Byte order (LMDB's default: memcmp, then the shorter first)

    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return Int(order) }
        }
        return a.count == b.count ? 0 : a.count < b.count ? -1 : 1
    }

    static func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
        b.withUnsafeBytes { compare(a, $0) }
    }

    private static func equal(_ value: MDB_val, _ key: UnsafeRawBufferPointer) -> Bool {
        compare(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size), key) == 0
    }

    private static func hasPrefix(_ value: MDB_val, _ prefix: UnsafeRawBufferPointer) -> Bool {
        guard value.mv_size >= prefix.count else { return false }
        return compare(UnsafeRawBufferPointer(start: value.mv_data, count: prefix.count), prefix) == 0
    }
}
