import CumulusModel
import CumulusStorage
import CumulusViews

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The records holding one word (or a combination of words), in the token index's
/// order: creation time, then name (`IndexKeys`, tokenIndex). Words are combined in
/// that order by merging, and only the result is sorted by name, into a ``NameSet``.
///
/// Postings stay the bytes the index holds (created(8) ‖ name) until the end: a
/// two-word search reads thousands of postings per word to keep a few hundred, and
/// reading them, a `String` and a struct each, was half of the search
/// (`Docs/PERFORMANCE.md` as of the eighteenth session, in git). Byte order is the index's order: the creation time is
/// big-endian, and names compare as their UTF-8 bytes.
struct TokenPostings {
    /// The postings end to end, ascending, each once.
    private var bytes: [UInt8] = []
    /// Where each posting ends in `bytes`.
    private var ends: [Int] = []

    /// No records.
    static let empty = TokenPostings()

    /// The entries of one word: every posting of `table` in the group `wordKey`
    /// (``IndexKeys/tokenKey(_:_:)``), which the index holds in posting order. A posting
    /// too short to hold a creation time is not one Cumulus wrote, and is skipped.
    static func scan(_ table: LMDBTable, wordKey: [UInt8], in txn: LMDBReadTransaction) throws -> TokenPostings {
        var result = TokenPostings()
        try txn.scanPostings(table, group: wordKey) { posting in
            guard posting.count >= IndexKeys.createdBytes else { return true }
            result.append(posting)
            return true
        }
        return result
    }

    /// The postings of `self` that the group `wordKey` of `table` also holds: the
    /// intersection with ``scan(_:wordKey:in:)``'s result, found while the word's
    /// postings are read, without keeping them.
    func intersection(scanning table: LMDBTable, wordKey: [UInt8], in txn: LMDBReadTransaction) throws -> TokenPostings {
        var result = TokenPostings()
        guard !isEmpty else { return result }
        var index = 0
        try bytes.withUnsafeBytes { mine in
            try txn.scanPostings(table, group: wordKey) { posting in
                guard posting.count >= IndexKeys.createdBytes else { return true }
                while index < ends.count {
                    let order = Self.compare(UnsafeRawBufferPointer(rebasing: mine[range(index)]), posting)
                    if order > 0 { return true }
                    index += 1
                    if order == 0 {
                        result.append(posting)
                        return true
                    }
                }
                return false  // past the last of ours: nothing more can match
            }
        }
        return result
    }

    private mutating func append(_ posting: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: posting)
        ends.append(bytes.count)
    }

    /// Where the posting at `index` lies in `bytes`.
    private func range(_ index: Int) -> Range<Int> { (index == 0 ? 0 : ends[index - 1])..<ends[index] }

    /// The records in either: one merge walk over both in order (``SortedMerge``).
    func union(_ other: TokenPostings) -> TokenPostings {
        var result = TokenPostings()
        bytes.withUnsafeBytes { left in
            other.bytes.withUnsafeBytes { right in
                let mine = ends.indices.map { UnsafeRawBufferPointer(rebasing: left[range($0)]) }
                let theirs = other.ends.indices.map { UnsafeRawBufferPointer(rebasing: right[other.range($0)]) }
                for posting in SortedMerge.union(mine, theirs, by: Self.compare) { result.append(posting) }
            }
        }
        return result
    }

    var isEmpty: Bool { ends.isEmpty }

    /// The record names, in name order.
    var names: NameSet {
        bytes.withUnsafeBytes { buffer in
            NameSet(ends.indices.map { index in
                let posting = range(index)
                let name = posting.lowerBound + IndexKeys.createdBytes..<posting.upperBound
                return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[name]), as: UTF8.self)
            })
        }
    }

    /// The index's order: the bytes, the shorter first on a common prefix.
    private static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return Int(order) }
        }
        return a.count == b.count ? 0 : a.count < b.count ? -1 : 1
    }
}
