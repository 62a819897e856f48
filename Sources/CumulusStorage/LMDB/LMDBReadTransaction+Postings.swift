/// Reading a table of posting blocks (``PostingLayout``, ``PostingBlock``) as the
/// logical entries its deferred writes made, not as its blocks.
extension LMDBReadTransaction {
    /// Calls `body` with each posting of the group `group` (a whole group, as
    /// ``PostingLayout/groupLength(_:)`` cuts it) in `table`, in order, until it returns
    /// `false`. The buffer is valid only during the call.
    public func scanPostings(
        _ table: LMDBTable, group: [UInt8], _ body: (_ posting: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var scratch: [UInt8] = []
        var going = true
        try scan(table, prefix: group) { key, block in
            try PostingBlock.forEach(block, key: key, groupLength: group.count, scratch: &scratch) { posting in
                going = try body(posting)
                return going
            }
            return going
        }
    }

    /// Calls `body` with every logical key of `table` (group ‖ posting), in key order,
    /// until it returns `false`; a table of plain entries passes its keys as they are
    /// (without their values).
    /// The buffer is valid only during the call. Throws `StorageError.corrupt` for a
    /// malformed block, or one whose key is not its group and first posting.
    public func scanLogicalKeys(_ table: LMDBTable, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let layout = table.postings else {
            try scan(table) { key, _ in try body(key) }
            return
        }
        var scratch: [UInt8] = []
        var key: [UInt8] = []
        var going = true
        try scan(table) { blockKey, block in
            guard let groupLength = layout.groupLength(blockKey) else {
                throw StorageError.corrupt("\(table.name): a block key with no posting group")
            }
            try PostingBlock.forEach(block, key: blockKey, groupLength: groupLength, scratch: &scratch) { posting in
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: blockKey[..<groupLength])
                key.append(contentsOf: posting)
                going = try key.withUnsafeBytes { try body($0) }
                return going
            }
            return going
        }
    }
}
