import CumulusLog
import CumulusModel
import CumulusStorage

/// A record's token entries that `tokenIndex` does not hold yet: the `tokenPending`
/// table's value, as PostgreSQL's GIN `fastupdate` keeps a pending list.
///
/// A save used to write one `tokenIndex` key per word of the record, each on a
/// different leaf page (words are scattered through the index), and LMDB writes every
/// dirtied page whole at commit: the token index was half of every write figure
/// (`Docs/PERFORMANCE.md` as of the twelfth session, in git). Now a small commit writes one entry per
/// record here instead, under the record's own key (``ViewKeys/record(_:_:)``), and
/// once the table holds ``mergeThreshold`` entries, that many (the first in key order)
/// are written to `tokenIndex` in one sorted pass (`Views.mergePendingTokens`), where
/// each word's page is dirtied once for many records.
///
/// A deleted record's entry (its indexed side, and an empty current side) is a delete
/// marker, as FTS5 keeps: a large commit (a cascade) merges what is pending first and
/// then appends one marker per victim, instead of taking each of its words out of the
/// posting blocks, and later commits merge them a batch at a time (the figures are in
/// `Docs/PERFORMANCE.md`); token queries in its zone drop those records' postings
/// until they are merged.
///
/// The entry says what the index holds for the record (its indexed side) and what it
/// should hold (its current side), so a merge knows which keys to delete without reading
/// any record, and a token query (`CandidateFinder`) answers exactly as a merged index
/// would: it drops the index's postings of every pending record and matches the
/// pending records' current tokens itself. An entry whose two sides are equal is
/// removed, not kept.
///
/// When merges happen depends only on the commits (a count reached after a commit,
/// a large commit, a schema change), so the leader, a follower, `rebuild` and
/// `replay` hold the same entries after the same commit. Digests and `verify` compare
/// the token index with its pending entries applied all the same
/// (`LogicalTokenIndex`): views an older build wrote merged at other points.
///
/// Layout (each side):
/// ```
/// u32 length (big-endian; 0: the side has no tokens, nothing follows)
/// typeHash(8) ‖ created(8) ‖ escaped tokens, each ending 00 00, sorted by bytes, each once
/// ```
/// The value is the indexed side followed by the current side.
public enum PendingTokens {
    /// Entries in `tokenPending` that make a commit's end merge, and how many one
    /// merge takes at most. Bounds the size of one merge, and so what a commit after a
    /// cascade pays for its markers; large enough that a word's page is written once
    /// per hundreds of records rather than once per record.
    public static let mergeThreshold = 1_024

    /// Events in one commit from which it merges everything pending first, then
    /// writes its saves' token entries straight into the index (a bulk save writes as
    /// many keys per word as a merge would, so staging them would only write them
    /// twice) and appends its deletes' markers to the emptied table.
    public static let directCommitEvents = 1_024

    /// Bytes of a side's length field.
    static let lengthBytes = 4

    /// The side of no record, or of one without any SEARCHABLE word.
    static let emptySide: [UInt8] = [0, 0, 0, 0]

    /// Whether `side` is the empty side.
    static func isEmpty(_ side: [UInt8]) -> Bool { side == emptySide }

    /// One version's side as stored: the tokens of `record` (nil: no record) under
    /// `schema`, with the type hash and creation time their index keys carry.
    static func side(of record: Record?, schema: EffectiveSchema) -> [UInt8] {
        guard let record else { return side(of: nil, words: []) }
        return side(of: record, words: words(of: record, schema: schema))
    }

    /// The side of `record` from its ``words(of:schema:)``: the words follow from
    /// what a client sent, the creation time from the server (``ContentDerivation``).
    static func side(of record: Record?, words: [UInt8]) -> [UInt8] {
        var side = emptySide
        guard let record, !words.isEmpty else { return side }
        side.reserveCapacity(lengthBytes + 16 + words.count)
        side.append(contentsOf: IndexKeys.hash8(record.recordType))
        IndexKeys.appendCreated(record, to: &side)
        side.append(contentsOf: words)
        let length = UInt32(side.count - lengthBytes)
        for index in 0..<lengthBytes { side[index] = UInt8(truncatingIfNeeded: length >> (8 * (3 - index))) }
        return side
    }

    /// The words of `record`'s SEARCHABLE fields under `schema`, each escaped and
    /// terminated as in an index key, sorted and each once, one after another: the
    /// part of a side that tokenizing makes.
    static func words(of record: Record, schema: EffectiveSchema) -> [UInt8] {
        let rules = schema.typeIndexes(record.recordType)
        var tokens: [UInt8] = []
        var ranges: [Range<Int>] = []
        Tokenizer.forEachTokenUTF8(of: record, where: rules.isSearchable) {
            let start = tokens.count
            OrderedEncoding.appendEscaped($0, to: &tokens)
            ranges.append(start..<tokens.count)
        }
        guard !tokens.isEmpty else { return [] }
        var words: [UInt8] = []
        words.reserveCapacity(tokens.count)
        // Sorted and unique: the order fields are walked in is not the same for a record
        // as saved and as decoded from the log, and the side's bytes must be (digests).
        tokens.withUnsafeBytes { bytes in
            func compare(_ a: Range<Int>, _ b: Range<Int>) -> Int {
                UTF8Order.compare(UnsafeRawBufferPointer(rebasing: bytes[a]), UnsafeRawBufferPointer(rebasing: bytes[b]))
            }
            ranges.sort { compare($0, $1) < 0 }
            var previous: Range<Int>?
            for range in ranges {
                if let previous, compare(previous, range) == 0 { continue }
                words.append(contentsOf: bytes[range])
                previous = range
            }
        }
        return words
    }

    /// A stored entry: the indexed side then the current side.
    static func entry(indexed: some Collection<UInt8>, current: [UInt8]) -> [UInt8] {
        var entry: [UInt8] = []
        entry.reserveCapacity(indexed.count + current.count)
        entry.append(contentsOf: indexed)
        entry.append(contentsOf: current)
        return entry
    }

    /// The byte length of the side that `bytes` starts with, length field included;
    /// `nil` if malformed or cut short.
    static func sideLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= lengthBytes else { return nil }
        var length = 0
        for index in 0..<lengthBytes { length = length << 8 | Int(bytes[index]) }
        let total = lengthBytes + length
        guard total <= bytes.count, length == 0 || length > 16 else { return nil }
        return total
    }

    /// One side read from stored bytes.
    struct Side: Sendable {
        /// The record type's hash (``IndexKeys/hash8(_:)``); empty when the side has no tokens.
        var typeHash: ArraySlice<UInt8>
        /// The creation-time bytes its index keys carry.
        var created: ArraySlice<UInt8>
        /// Each token escaped and terminated as in an index key, sorted, each once.
        var tokens: [ArraySlice<UInt8>]

        /// Reads the side at the start of `bytes`; `nil` if malformed.
        init?(_ bytes: ArraySlice<UInt8>) {
            guard bytes.count >= lengthBytes else { return nil }
            var length = 0
            for byte in bytes.prefix(lengthBytes) { length = length << 8 | Int(byte) }
            let start = bytes.startIndex + lengthBytes
            guard length <= bytes.count - lengthBytes else { return nil }
            guard length > 0 else {
                typeHash = []
                created = []
                tokens = []
                return
            }
            guard length > 16 else { return nil }
            typeHash = bytes[start..<start + 8]
            created = bytes[start + 8..<start + 16]
            tokens = []
            var index = start + 16
            var tokenStart = index
            let end = start + length
            // A token ends at 00 00; 00 FF is an escaped zero inside it.
            while index < end {
                if bytes[index] == 0 {
                    guard index + 1 < end else { return nil }
                    if bytes[index + 1] == 0 {
                        let token = bytes[tokenStart..<index + 2]
                        // Sorted and unique as written; anything else is damage.
                        if let last = tokens.last, !last.lexicographicallyPrecedes(token) { return nil }
                        tokens.append(token)
                        tokenStart = index + 2
                    }
                    index += 2
                } else {
                    index += 1
                }
            }
            guard tokenStart == end else { return nil }
        }

        /// Calls `body` with each `tokenIndex` key of this side for `name` in the zone
        /// `zoneKey`, in key order, built in one reused buffer: a merge of new records
        /// only adds keys, and needs no list of them.
        func forEachIndexKey(
            zoneKey: some Collection<UInt8>, name: some Collection<UInt8>, _ body: ([UInt8]) throws -> Void
        ) rethrows {
            try IndexKeys.forEachTokenEntry(
                zoneKey: zoneKey, typeHash: typeHash, escapedTokens: tokens, created: created, name: name, body)
        }

        /// The `tokenIndex` keys of this side for `name` in the zone `zoneKey`, sorted
        /// and unique (as the tokens are).
        func indexKeys(zoneKey: some Collection<UInt8>, name: some Collection<UInt8>) -> [[UInt8]] {
            var keys: [[UInt8]] = []
            keys.reserveCapacity(tokens.count)
            forEachIndexKey(zoneKey: zoneKey, name: name) { keys.append($0) }
            return keys
        }
    }

    /// Every pending record of one zone, as a token query reads them: the names, and
    /// for each type's word the records whose current side holds it (an inverted list,
    /// so matching a query's words costs a lookup per word, not a walk of every entry).
    public struct Overlay: Sendable {
        /// The records' names, in byte order (the table's key order).
        public private(set) var names: [String] = []
        /// typeHash ‖ escaped token → indices into ``names``, ascending.
        private var postings: [HashedBytes: [Int]] = [:]

        /// Whether no record of the zone is pending.
        public var isEmpty: Bool { names.isEmpty }

        /// Adds the next record, in name order, whose current side is empty (a deleted
        /// record, or one without words): the index's postings of it are dropped, and
        /// nothing matches it.
        mutating func append(name: String) {
            names.append(name)
        }

        /// Adds the next record, in name order, with its current side.
        mutating func append(name: String, current: Side) {
            let index = names.count
            names.append(name)
            for token in current.tokens {
                let key = Array(current.typeHash) + Array(token)
                postings[HashedBytes(key), default: []].append(index)
            }
        }

        /// The names, in byte order, of the pending records of `recordType` whose
        /// current tokens hold every one of `tokens` (`all`) or any: what the merged
        /// index's postings of those words would say.
        public func matching(recordType: String, tokens words: some Sequence<String>, all: Bool) -> [String] {
            let typeHash = IndexKeys.hash8(recordType)
            var result: Set<Int>?
            for word in words {
                let found = Set(postings[HashedBytes(typeHash + IndexKeys.tokenKey([], word))] ?? [])
                if all {
                    result = result.map { $0.intersection(found) } ?? found
                } else {
                    result = (result ?? []).union(found)
                }
            }
            return (result ?? []).sorted().map { names[$0] }
        }
    }

    /// Calls `body` with each `tokenIndex` key of `side` (a whole side with tokens, its
    /// length field included and nothing after it) for the record `name` in the zone
    /// `zoneKey`, in key order, built in `key`, and returns `true`; returns `false`,
    /// calling nothing, for the empty side or a malformed one. What a merge adds for a
    /// new record, and what a large commit writes or deletes for a record that gains
    /// or loses all its words (a cascade's victims): parsing each side into a `Side`
    /// first, its value copied and its tokens listed, was a fifth of a merge in a
    /// replay's profile.
    static func forEachIndexKey(
        ofSide side: UnsafeRawBufferPointer, zoneKey: some Collection<UInt8>, name: some Collection<UInt8>,
        building key: inout [UInt8], _ body: ([UInt8]) throws -> Void
    ) rethrows -> Bool {
        let headerLength = 16
        guard side.count > lengthBytes + headerLength else { return false }
        var sideLength = 0
        for index in 0..<lengthBytes { sideLength = sideLength << 8 | Int(side[index]) }
        guard sideLength > headerLength, lengthBytes + sideLength == side.count else { return false }
        let header = lengthBytes
        let tokensStart = header + headerLength
        // Check the tokens as `Side` does before any key is written: each ends at 00 00
        // (00 FF is an escaped zero inside it), sorted and unique.
        var tokenEnds: [Int] = []
        var index = tokensStart
        var tokenStart = tokensStart
        var previous: Range<Int>?
        while index < side.count {
            guard side[index] == 0 else {
                index += 1
                continue
            }
            guard index + 1 < side.count else { return false }
            if side[index + 1] == 0 {
                let token = tokenStart..<index + 2
                if let previous {
                    let a = UnsafeRawBufferPointer(rebasing: side[previous])
                    let b = UnsafeRawBufferPointer(rebasing: side[token])
                    guard a.lexicographicallyPrecedes(b) else { return false }
                }
                previous = token
                tokenEnds.append(index + 2)
                tokenStart = index + 2
            }
            index += 2
        }
        guard tokenStart == side.count, !tokenEnds.isEmpty else { return false }
        let typeHash = UnsafeRawBufferPointer(rebasing: side[header..<header + 8])
        let created = UnsafeRawBufferPointer(rebasing: side[header + 8..<header + 16])
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: zoneKey)
        key.append(contentsOf: typeHash)
        let shared = key.count
        var start = tokensStart
        for end in tokenEnds {
            key.removeLast(key.count - shared)
            key.append(contentsOf: UnsafeRawBufferPointer(rebasing: side[start..<end]))
            key.append(contentsOf: created)
            key.append(contentsOf: name)
            try body(key)
            start = end
        }
        return true
    }

    /// Both sides of the entry stored under `key`; a malformed one is `corrupt`.
    static func sides(of value: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws -> (indexed: Side, current: Side) {
        guard let sides = sides(Array(value)) else { throw malformed(key) }
        return sides
    }

    /// The error for a malformed entry stored under `key`.
    static func malformed(_ key: some Sequence<UInt8>) -> StorageError {
        StorageError.corrupt("tokenPending entry \(Hex.encode(Array(key)))")
    }

    /// The bytes of both sides of a stored entry, each with its length field, without
    /// copying or parsing their tokens; `nil` if the lengths do not fit the entry.
    static func sideBytes(_ entry: UnsafeRawBufferPointer)
        -> (indexed: UnsafeRawBufferPointer, current: UnsafeRawBufferPointer)?
    {
        guard let split = sideLength(entry),
            let currentLength = sideLength(UnsafeRawBufferPointer(rebasing: entry[split...])),
            split + currentLength == entry.count
        else { return nil }
        return (UnsafeRawBufferPointer(rebasing: entry[..<split]), UnsafeRawBufferPointer(rebasing: entry[split...]))
    }

    /// Both sides of a stored entry; `nil` if malformed.
    static func sides(_ entry: [UInt8]) -> (indexed: Side, current: Side)? {
        guard let indexed = Side(entry[...]),
            let split = entry.withUnsafeBytes({ sideLength($0) }),
            let current = Side(entry[split...]),
            let currentLength = entry.withUnsafeBytes({ sideLength(UnsafeRawBufferPointer(rebasing: $0[split...])) }),
            split + currentLength == entry.count
        else { return nil }
        return (indexed, current)
    }
}
