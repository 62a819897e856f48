/// How a table of posting blocks splits a logical key into its group and its posting
/// (``PostingBlock``): the group is the key up to and including the first `00 00` at
/// or after ``groupStart``, the posting everything after it.
///
/// Such a table's deferred writes (`LMDBWriteTransaction.deferPut`) take logical keys,
/// one per posting; it stores each group's postings in blocks, keyed by the logical key
/// of their first posting. The rule suits keys whose variable part is escaped so that
/// `00 00` cannot occur inside it (``groupStart`` skips the fixed-width bytes before it,
/// which may hold any bytes); then no group's keys are a prefix of another's, and a
/// group's keys are contiguous in the table's order.
public struct PostingLayout: Sendable, Hashable {
    /// Bytes at the start of every key that are part of the group and never searched
    /// for the terminator.
    public let groupStart: Int

    /// A layout whose terminator search begins at byte `groupStart`.
    public init(groupStart: Int) {
        self.groupStart = groupStart
    }

    /// The group's length in `key` (through the terminator), or `nil` if `key` has no
    /// terminator at or after ``groupStart`` or no posting byte after it.
    public func groupLength(_ key: UnsafeRawBufferPointer) -> Int? {
        var index = groupStart
        while index + 1 < key.count {
            if key[index] == 0 {
                if key[index + 1] == 0 { return index + 2 < key.count ? index + 2 : nil }
                index += 2  // an escaped 00 FF, or a lone zero of some other byte pair
            } else {
                index += 1
            }
        }
        return nil
    }
}
