import CumulusModel

/// A page of records as they are stored (``RecordCodec``'s bytes), handed to a read's
/// caller from inside its read transaction: what the server writes its answers from
/// (``RecordJSONWriter``), without building a ``Record`` per row.
///
/// **Lifetime** (lmdb.h's rule for `mdb_get`): every buffer points into the memory
/// map and is valid only until the call that received the page returns, when the
/// read transaction ends. Copy what you keep; never write through a buffer. The page
/// is not `Sendable`: it belongs to the thread of that call.
public struct StoredRecordPage {
    /// The records' stored bytes, in the read's order.
    public let records: [UnsafeRawBufferPointer]
    /// The read's `desiredKeys` (`nil`: every field), which the bytes still hold all
    /// of: the writer keeps only these.
    public let desiredKeys: Set<String>?

    /// A page.
    public init(records: [UnsafeRawBufferPointer], desiredKeys: Set<String>?) {
        self.records = records
        self.desiredKeys = desiredKeys
    }

    /// The page's records as objects, with only the desired keys: for callers of the
    /// Swift API that want ``Record``s. Each is decoded from its bytes (values stay
    /// encoded until read, copied out of the map so they outlive the transaction).
    public func decodedRecords() throws -> [Record] {
        var hints = RecordDecodeHints()
        let desired = DesiredKeys(desiredKeys.map(Array.init))
        return try records.map { desired.applied(to: try RecordCodec.decodeForReading($0, hints: &hints)) }
    }
}
