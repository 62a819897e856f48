import CumulusLog
import CumulusModel
import CumulusStorage

/// The `usage` table: bytes held per payer and per container (``RecordUsage``).
extension Views {
    /// Writes one commit's changes of ``RecordUsage``: a total that reaches zero is
    /// removed, so the table holds only payers that hold something.
    func write(_ usage: RecordUsage, _ txn: LMDBWriteTransaction) throws {
        for (key, change) in usage.changes where change != 0 {
            let current = try storedUsage(key.bytes, txn)
            // Never below zero: the views are derived, and a count that cannot go
            // negative keeps a damaged count from granting more than the quota.
            let updated = change < 0 ? current - min(current, -change) : current + change
            if updated == 0 {
                _ = try txn.delete(tables.usage, key: key.bytes)
            } else {
                try txn.put(tables.usage, key: key.bytes, value: BigEndian.bytes(UInt64(updated)))
            }
        }
    }

    /// Frees in `usage` what the records of the zone `zoneKey` of `database` hold, their
    /// stored bytes and their files', each charged to who paid for it (the database's
    /// owner, or in the public database each record's creator): read before the zone's
    /// rows are dropped.
    func chargeFreed(byZone zoneKey: [UInt8], in database: DatabaseID, to usage: inout RecordUsage, _ txn: LMDBReadTransaction)
        throws
    {
        var freed: [String?: Int64] = [:]
        var creators: [String: String] = [:]
        func name(_ key: UnsafeRawBufferPointer) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: key[zoneKey.count...]), as: UTF8.self)
        }
        try txn.scan(tables.records, prefix: zoneKey) { key, value in
            var creator: String?
            if database.scope == .public {
                creator = try RecordReader(value).creatorName()
                creators[name(key)] = creator
            }
            freed[creator, default: 0] += Int64(value.count)
            return true
        }
        try txn.scan(tables.assetsOut, prefix: zoneKey) { key, value in
            freed[creators[name(key)], default: 0] += Self.heldAssets(in: value).reduce(0) { $0 + $1.size }
            return true
        }
        for (creator, bytes) in freed { usage.charge(-bytes, in: database, creator: creator) }
    }

    /// The bytes the current records `user` pays for hold in `container` (both
    /// environments).
    public func recordBytes(ofUser user: String, container: String, in txn: LMDBReadTransaction) throws -> Int64 {
        try storedUsage(ViewKeys.usage(container: container, user: user), txn)
    }

    /// The bytes every current record of `container` holds (both environments).
    public func recordBytes(ofContainer container: String, in txn: LMDBReadTransaction) throws -> Int64 {
        try storedUsage(ViewKeys.usage(container: container, user: nil), txn)
    }

    private func storedUsage(_ key: [UInt8], _ txn: LMDBReadTransaction) throws -> Int64 {
        let stored = try txn.withValue(tables.usage, key: key) { value -> UInt64? in BigEndian.decode(UInt64.self, from: value) }
        return Int64(clamping: (stored ?? nil) ?? 0)
    }
}
