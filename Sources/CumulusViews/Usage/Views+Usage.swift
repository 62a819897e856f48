import CumulusModel
import CumulusStorage

/// The `usage` table: bytes held per payer and per container (``RecordUsage``).
extension Views {
    /// Writes one commit's changes of ``RecordUsage``: a total that reaches zero is
    /// removed, so the table holds only payers that hold something.
    func write(_ usage: RecordUsage, _ txn: LMDBWriteTransaction) throws {
        for (key, change) in usage.changes where change != 0 {
            let current = try storedUsage(key, txn)
            // Never below zero: the views are derived, and a count that cannot go
            // negative keeps a damaged count from granting more than the quota.
            let updated = change < 0 ? current - min(current, -change) : current + change
            if updated == 0 {
                _ = try txn.delete(tables.usage, key: key)
            } else {
                try txn.put(tables.usage, key: key, value: BigEndian.bytes(UInt64(updated)))
            }
        }
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
