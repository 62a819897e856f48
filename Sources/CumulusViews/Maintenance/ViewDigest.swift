import Crypto
import CumulusModel
import CumulusStorage

/// A SHA-256 over every entry of a view table, in key order, as ``ViewEntries`` gives
/// them: equal digests mean views that answer alike, because the encodings stored in
/// views are deterministic. A table of posting blocks counts its postings as entries,
/// and the token index its postings with what is pending applied.
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

    /// Digests one table's compared entries (``ViewEntries``).
    static func of(_ entries: ViewEntries) throws -> ViewDigest {
        var hasher = SHA256()
        var count = 0
        try entries.forEach(nil) { key, value in
            var header = BinaryWriter(capacity: 16)
            header.length(key.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: key)
            header = BinaryWriter(capacity: 16)
            header.length(value.count)
            hasher.update(data: header.bytes)
            hasher.update(bufferPointer: value)
            count += 1
            return true
        }
        return ViewDigest(table: entries.table, entries: count, hash: Array(hasher.finalize()))
    }
}

extension Views {
    /// A digest of every view table as `txn` sees it, in ``ViewTables/Name``'s order,
    /// `tokenPending` applied to `tokenIndex` rather than digested alone
    /// (``LogicalTokenIndex``): what `verify` compares, and tests comparing two
    /// directories' views.
    public func digests(in txn: LMDBReadTransaction) throws -> [ViewDigest] {
        try ViewEntries.all(of: tables, in: txn).map(ViewDigest.of)
    }
}
