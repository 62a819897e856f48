import CumulusLog
import CumulusModel
import CumulusStorage

extension Views {
    /// The record named `name` in the zone whose key is `zoneKey`, or `nil`: for
    /// callers that already hold the zone key (a query reads many records of one zone
    /// and need not hash the zone's identity for each).
    public func record(zoneKey: [UInt8], name: String, _ txn: LMDBReadTransaction) throws -> Record? {
        try storedRecord(at: ViewKeys.record(zoneKey, name), txn)
    }

    /// The record named `name` in the zone `zoneKey` with its system fields and only
    /// the user fields and encrypted values whose key `keep` accepts, or `nil`: what a
    /// read with `desiredKeys` returns, without decoding the values it drops.
    public func record(
        zoneKey: [UInt8], name: String, keeping keep: (String) -> Bool, _ txn: LMDBReadTransaction
    ) throws -> Record? {
        try txn.withValue(tables.records, key: ViewKeys.record(zoneKey, name)) {
            try RecordReader($0).record(keepingFields: keep, keepingEncrypted: keep)
        }
    }

    /// The type of the record `name` in the zone `zoneKey`, or `nil` if there is none:
    /// read from the stored header, without decoding the fields.
    public func recordType(zoneKey: [UInt8], name: String, _ txn: LMDBReadTransaction) throws -> String? {
        try txn.withValue(tables.records, key: ViewKeys.record(zoneKey, name)) { try RecordReader($0).recordType }
    }

    /// The record stored under `key` in the `records` table, decoded, or `nil`.
    func storedRecord(at key: [UInt8], _ txn: LMDBReadTransaction) throws -> Record? {
        try txn.withValue(tables.records, key: key) { try RecordCodec.decode($0) }
    }
}
