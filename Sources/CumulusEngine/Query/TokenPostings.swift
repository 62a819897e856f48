import CumulusModel
import CumulusStorage
import CumulusViews

/// The records holding one word (or a combination of words), in the token index's
/// order: creation time, then name (`IndexKeys`, tokenIndex). Words are combined in
/// that order by merging, and only the result is sorted by name, into a ``NameSet``.
struct TokenPostings {
    /// One record in a word's entries.
    struct Posting {
        /// The creation-time bytes of the entry, read as one big-endian number, so
        /// comparing numbers compares the bytes.
        var created: UInt64
        /// The record name.
        var name: String
    }

    /// The postings, ascending by (creation, name), each once.
    private(set) var postings: [Posting]

    /// No records.
    static let empty = TokenPostings(postings: [])

    /// The entries of one word: every posting of `table` in the group `wordKey`
    /// (``IndexKeys/tokenKey(_:_:)``), which the index holds in posting order. A posting
    /// too short to hold a creation time is not one Cumulus wrote, and is skipped.
    static func scan(_ table: LMDBTable, wordKey: [UInt8], in txn: LMDBReadTransaction) throws -> TokenPostings {
        var postings: [Posting] = []
        try txn.scanPostings(table, group: wordKey) { posting in
            guard posting.count >= IndexKeys.createdBytes else { return true }
            var created: UInt64 = 0
            for byte in posting[..<IndexKeys.createdBytes] { created = created << 8 | UInt64(byte) }
            postings.append(Posting(
                created: created,
                name: String(decoding: UnsafeRawBufferPointer(rebasing: posting[IndexKeys.createdBytes...]), as: UTF8.self)))
            return true
        }
        return TokenPostings(postings: postings)
    }

    /// The records in both.
    func intersection(_ other: TokenPostings) -> TokenPostings {
        TokenPostings(postings: SortedMerge.intersection(postings, other.postings, by: Self.compare))
    }

    /// The records in either.
    func union(_ other: TokenPostings) -> TokenPostings {
        TokenPostings(postings: SortedMerge.union(postings, other.postings, by: Self.compare))
    }

    var isEmpty: Bool { postings.isEmpty }

    /// The record names, in name order.
    var names: NameSet { NameSet(postings.map(\.name)) }

    /// The index's order: creation bytes, then name bytes.
    static func compare(_ lhs: Posting, _ rhs: Posting) -> Int {
        if lhs.created != rhs.created { return lhs.created < rhs.created ? -1 : 1 }
        return UTF8Order.compare(lhs.name, rhs.name)
    }
}
