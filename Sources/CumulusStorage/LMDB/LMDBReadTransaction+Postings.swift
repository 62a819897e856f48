/// Reading a table of posting blocks (``PostingLayout``, ``PostingBlock``) as the
/// logical entries its deferred writes made, not as its blocks.
extension LMDBReadTransaction {
    /// Calls `body` with each posting of the group `group` (a whole group, as
    /// ``PostingLayout/groupLength(_:)`` cuts it) in `table`, in order, until it returns
    /// `false`. The buffer is valid only during the call.
    public func scanPostings(
        _ table: LMDBTable, group: [UInt8], _ body: (_ posting: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var going = true
        try scan(table, prefix: group) { key, block in
            try PostingBlock.forEach(block, key: key, groupLength: group.count) { posting in
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
    ///
    /// `start`: begin at the first logical key not below it.
    public func scanLogicalKeys(
        _ table: LMDBTable, from start: [UInt8]? = nil, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        guard let layout = table.postings else {
            try scan(table, from: start) { key, _ in try body(key) }
            return
        }
        // The block holding `start` begins at the last block key not above it.
        var first = start
        if let start {
            try scan(table, to: start + [0], reverse: true) { key, _ in
                first = Array(key)
                return false
            }
        }
        var key: [UInt8] = []
        var going = true
        try scan(table, from: first) { blockKey, block in
            guard let groupLength = layout.groupLength(blockKey) else {
                throw StorageError.corrupt("\(table.name): a block key with no posting group")
            }
            try PostingBlock.forEach(block, key: blockKey, groupLength: groupLength) { posting in
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: blockKey[..<groupLength])
                key.append(contentsOf: posting)
                if let start, key.lexicographicallyPrecedes(start) { return true }
                going = try key.withUnsafeBytes { try body($0) }
                return going
            }
            return going
        }
    }
}
