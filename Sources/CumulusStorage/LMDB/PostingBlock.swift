/// The value of one entry in a table of posting blocks (``PostingLayout``): a run of a
/// group's postings in key order, each front-coded against the one before it, as
/// LevelDB's blocks and FTS5's doclists store sorted keys.
///
/// **Why.** An index with one B-tree entry per (word, record) repeats the word's prefix
/// in every key and pays LMDB's node overhead and a search per entry: the token index
/// held about 70 % of a record's index entries and was the largest cost of applying a
/// batch (`Docs/PERFORMANCE.md`). A block holds dozens of one word's postings in one
/// entry, at about a third of their bytes, and a batch's postings of that word are
/// merged into it in one read and one write.
///
/// **Layout.** One or more postings, each `varint shared ‖ varint suffix length ‖
/// suffix`: the posting is the previous one's first `shared` bytes followed by the
/// suffix (the first posting shares nothing). Postings are strictly ascending. The
/// entry's key is the group followed by the first posting, so the table is ordered as
/// the logical keys are. An empty block is never stored.
///
/// **Boundaries.** A write fills a block up to ``targetBytes`` and starts another, so
/// where blocks begin depends on the order writes came in: two copies of a table with
/// the same postings may block them differently, as two B-trees with the same keys
/// may have different pages. Only postings are compared (view digests read them, not
/// blocks).
public enum PostingBlock {
    /// Bytes past which a write starts a new block. A key (up to 511 bytes) and a value
    /// of this size stay within LMDB's largest node for a 4 KiB page (about 2 KiB),
    /// so no block needs an overflow page.
    public static let targetBytes = 1_024

    /// The longest posting a block can hold: a posting is part of an LMDB key.
    public static let maxPostingBytes = 511

    /// Calls `body` with each posting of `block`, stored under `key` whose group is its
    /// first `groupLength` bytes, in order, until it returns `false`. The buffer is
    /// valid only during the call. Throws `StorageError.corrupt` for an empty or
    /// malformed block, or one whose first posting is not its key's: writers find
    /// blocks by their keys, so such a block would misplace every later write.
    public static func forEach(
        _ block: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, groupLength: Int,
        _ body: (UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard !block.isEmpty else { throw StorageError.corrupt("empty posting block") }
        // Each posting is built over the one before it in one fixed buffer: a token
        // search decodes thousands per word, and growing and cutting an array for each
        // was most of reading them.
        try withUnsafeTemporaryAllocation(byteCount: maxPostingBytes, alignment: 1) { posting in
            var length = 0
            var offset = 0
            var first = true
            while offset < block.count {
                guard let shared = varint(block, &offset), let suffix = varint(block, &offset), shared <= length,
                    suffix <= block.count - offset, shared + suffix > 0, shared + suffix <= maxPostingBytes,
                    let target = posting.baseAddress, let source = block.baseAddress
                else { throw StorageError.corrupt("malformed posting block") }
                (target + shared).copyMemory(from: source + offset, byteCount: suffix)
                length = shared + suffix
                offset += suffix
                let current = UnsafeRawBufferPointer(rebasing: posting[..<length])
                if first {
                    guard groupLength <= key.count, current.elementsEqual(key[groupLength...]) else {
                        throw StorageError.corrupt("a posting block whose key is not its first posting")
                    }
                    first = false
                }
                guard try body(current) else { return }
            }
        }
    }

    /// Appends `posting` to the block being built in `block`, front-coded against
    /// `previous` (`nil`: the block's first posting).
    static func append(_ posting: UnsafeRawBufferPointer, after previous: UnsafeRawBufferPointer?, to block: inout [UInt8]) {
        var shared = 0
        if let previous {
            let limit = min(previous.count, posting.count)
            while shared < limit, previous[shared] == posting[shared] { shared += 1 }
        }
        appendVarint(shared, to: &block)
        appendVarint(posting.count - shared, to: &block)
        block.append(contentsOf: UnsafeRawBufferPointer(rebasing: posting[shared...]))
    }

    /// The most bytes ``append(_:after:to:)`` can add for a posting of `count` bytes.
    static func maxEncodedSize(_ count: Int) -> Int { count + 2 * 10 }

    private static func appendVarint(_ value: Int, to bytes: inout [UInt8]) {
        var value = UInt(value)
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// A LEB128 number at `offset` (advanced past it), or `nil` if it runs off the
    /// block or exceeds what a posting could need.
    private static func varint(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> Int? {
        var value = 0
        var shift = 0
        while offset < bytes.count, shift < 28 {
            let byte = bytes[offset]
            offset += 1
            value |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
