import Crypto
import CumulusModel
import CumulusStorage

/// A SHA-256 over every entry of a table, in key order: equal digests mean equal
/// tables, because the encodings stored in views are deterministic.
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
        var header = BinaryWriter(capacity: 16)
        try txn.scan(table) { key, value in
            header = BinaryWriter(capacity: 16)
            header.length(key.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: key)
            header = BinaryWriter(capacity: 16)
            header.length(value.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: value)
            entries += 1
            return true
        }
        return ViewDigest(table: table.name, entries: entries, hash: Array(hasher.finalize()))
    }
}
