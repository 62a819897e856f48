/// The order the binary formats sort strings in: by their UTF-8 bytes
/// (`Docs/LOG-FORMAT.md` §2 field keys, §4 changed keys).
///
/// Same result as `lhs.utf8.lexicographicallyPrecedes(rhs.utf8)`, which walks the
/// `UTF8View` index by index and showed up as a few per cent of an append in the
/// profile; native strings expose their UTF-8 contiguously, so this compares raw
/// bytes instead and falls back to the view only for bridged strings.
public enum UTF8Order {
    /// Whether `lhs` sorts strictly before `rhs` by UTF-8 bytes.
    @inlinable public static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Three-way comparison of two strings by their UTF-8 bytes (byte equality, not
    /// Swift's canonical equivalence): negative, zero or positive.
    @inlinable public static func compare(_ lhs: String, _ rhs: String) -> Int {
        let fast = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                compare(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right))
            }
        }
        if let fast, let order = fast { return order }
        if lhs.utf8.elementsEqual(rhs.utf8) { return 0 }
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : 1
    }

    /// `strings` sorted by UTF-8 bytes with equal strings (`==`, which includes
    /// canonically equivalent Unicode) removed: what `Set(strings).sorted(by: precedes)`
    /// gives, without building the set when `strings` already are that — all ASCII
    /// (where `==` is byte equality) and strictly ascending — as stored lists are.
    public static func sortedUnique(_ strings: [String]) -> [String] {
        var index = 0
        while index < strings.count {
            if !isASCII(strings[index]) { break }
            if index > 0 && !precedes(strings[index - 1], strings[index]) { break }
            index += 1
        }
        if index == strings.count { return strings }
        return Set(strings).sorted(by: precedes)
    }

    /// `items` sorted by the three-way `compare`, with items it calls equal kept once:
    /// the one sort-and-compact loop for byte-ordered names and keys (index keys,
    /// query candidates), where `compare` is byte order, not Swift's `==`.
    ///
    /// Inlinable so that callers in other modules get it specialized: called
    /// generically, sorting a saved record's changed keys took 61 allocations.
    @inlinable public static func sorted<Item>(_ items: [Item], uniqueBy compare: (Item, Item) -> Int) -> [Item] {
        var sorted = items.sorted { compare($0, $1) < 0 }
        var kept = 0
        for index in sorted.indices where kept == 0 || compare(sorted[kept - 1], sorted[index]) != 0 {
            sorted.swapAt(kept, index)
            kept += 1
        }
        sorted.removeLast(sorted.count - kept)
        return sorted
    }

    /// Whether every UTF-8 byte of `string` is below 0x80.
    @inlinable public static func isASCII(_ string: String) -> Bool {
        string.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where byte >= 0x80 { return false }
            return true
        } ?? string.utf8.allSatisfy { $0 < 0x80 }
    }

    /// The three-way byte comparison below, of two byte arrays: the order LMDB keeps
    /// keys in, for index keys and prefixes built in memory.
    @inlinable public static func compare(_ lhs: [UInt8], _ rhs: [UInt8]) -> Int {
        lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { right in compare(left, right) } }
    }

    /// Three-way lexicographic comparison of two byte strings: negative, zero or
    /// positive as `lhs` sorts before, equal to or after `rhs` (a proper prefix first).
    @inlinable public static func compare(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Int {
        let common = min(lhs.count, rhs.count)
        var index = 0
        // Eight bytes at a time: read as big-endian words, the first differing word
        // orders the strings as its first differing byte does. Names and keys run to
        // tens of bytes, and every read of a record compares a few of them.
        while index + 8 <= common {
            let a = UInt64(bigEndian: lhs.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let b = UInt64(bigEndian: rhs.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if a != b { return a < b ? -1 : 1 }
            index += 8
        }
        while index < common {
            let a = lhs[index]
            let b = rhs[index]
            if a != b { return a < b ? -1 : 1 }
            index += 1
        }
        return lhs.count == rhs.count ? 0 : (lhs.count < rhs.count ? -1 : 1)
    }
}
