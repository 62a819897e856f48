import Crypto
import CumulusModel
import CumulusStorage

/// A SHA-256 over every entry of a table, in key order: equal digests mean equal
/// tables, because the encodings stored in views are deterministic. A table of
/// posting blocks counts its postings as entries (``LMDBReadTransaction/scanLogicalKeys(_:from:_:)``).
public struct ViewDigest: Sendable, Hashable, CustomStringConvertible {
    /// The table's name.
    public var table: String
    /// Number of entries (duplicates counted).
    public var entries: Int
    /// SHA-256 over `varint(key length) ‖ key ‖ varint(value length) ‖ value` per entry.
    public var hash: [UInt8]

    /// `table: entries, hash prefix`.
    public var description: String {
        "\(table): \(entries) entries, " + Hex.encode(Array(hash.prefix(8)))
    }

    /// Digests `table` as `txn` sees it.
    public static func of(_ table: LMDBTable, in txn: LMDBReadTransaction) throws -> ViewDigest {
        var hasher = SHA256()
        var entries = 0
        func add(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            var header = BinaryWriter(capacity: 16)
            header.length(key.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: key)
            header = BinaryWriter(capacity: 16)
            header.length(value.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: value)
            entries += 1
        }
        if table.postings != nil {
            // Postings are digested one entry each with an empty value, as the table
            // stored them before it had blocks: which postings share a block depends
            // on how writes were batched, not on the log.
            try txn.scanLogicalKeys(table) { key in
                add(key, UnsafeRawBufferPointer(start: nil, count: 0))
                return true
            }
        } else {
            try txn.scan(table) { key, value in
                add(key, value)
                return true
            }
        }
        return ViewDigest(table: table.name, entries: entries, hash: Array(hasher.finalize()))
    }
}
