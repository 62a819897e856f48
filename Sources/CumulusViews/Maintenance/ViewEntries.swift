import CumulusStorage

/// One view table's entries as digests and `verify` compare them, in key order: what
/// the views answer, not how the storage happened to arrange it. A plain table's
/// entries are its own; a table of posting blocks gives one entry per posting with
/// an empty value (which postings share a block depends on how writes were batched);
/// the token index gives its postings with the pending entries applied
/// (``LogicalTokenIndex``), a posting the two disagree about with the value `01`, and
/// `tokenPending` is compared through it, not alone.
struct ViewEntries {
    /// The table's name (the token index's, for the two parts of it).
    let table: String
    /// Calls its body with every entry whose key is not below `from`, in key order,
    /// until the body returns `false`. The buffers are valid only during that call.
    let forEach:
        (_ from: [UInt8]?, _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool)
            throws -> Void

    /// Every compared view table of `tables` as `txn` sees it, in ``ViewTables/Name``'s
    /// order, `tokenPending` left out (``LogicalTokenIndex`` applies it).
    static func all(of tables: ViewTables, in txn: LMDBReadTransaction) throws -> [ViewEntries] {
        try ViewTables.Name.allCases.compactMap { name in
            let table = tables.table(name)
            switch name {
            case .tokenPending:
                return nil
            case .tokenIndex:
                let logical = try LogicalTokenIndex(tables, in: txn)
                return ViewEntries(table: table.name) { start, body in
                    try logical.forEach(from: start, in: txn) { key, damaged in
                        try key.withUnsafeBytes { key in
                            try (damaged ? [1] : [UInt8]()).withUnsafeBytes { try body(key, $0) }
                        }
                    }
                }
            default:
                guard table.postings == nil else {
                    return ViewEntries(table: table.name) { start, body in
                        try txn.scanLogicalKeys(table, from: start) { try body($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
                    }
                }
                return ViewEntries(table: table.name) { start, body in try txn.scan(table, from: start, body) }
            }
        }
    }
}
