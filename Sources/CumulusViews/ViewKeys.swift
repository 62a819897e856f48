import CumulusLog
import CumulusModel

/// How view keys are built. Every key starts with the 16-byte zone key (or database
/// key) from ``FeedKeys``, so a zone's entries in every table are one prefix range —
/// which is what makes deleting a zone a handful of range deletions — and no key
/// exceeds LMDB's 511 bytes (16 + 8 + 255 at most).
public enum ViewKeys {
    /// `records`, `refsOut`: zone key ‖ record name.
    public static func record(_ zoneKey: [UInt8], _ recordName: String) -> [UInt8] {
        var key = zoneKey
        key.append(contentsOf: recordName.utf8)
        return key
    }

    /// Calls `body` with ``record(_:_:)``'s key built in temporary memory (on the
    /// stack for a valid name): for a read per result, where building the key as an
    /// array cost two allocations of the nine a query result took.
    public static func withRecordKey<R>(
        _ zoneKey: [UInt8], _ recordName: String, _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: zoneKey.count + recordName.utf8.count) { key in
            _ = key.initialize(from: zoneKey)
            _ = UnsafeMutableBufferPointer(rebasing: key[zoneKey.count...]).initialize(from: recordName.utf8)
            return try body(UnsafeRawBufferPointer(key))
        }
    }

    /// `refsIn`: zone key ‖ target record name.
    public static func target(_ zoneKey: [UInt8], _ recordName: String) -> [UInt8] {
        record(zoneKey, recordName)
    }

    /// `byType`: zone key ‖ first 8 bytes of SHA-256(record type) ‖ record name.
    /// Types are hashed because type and name together may exceed the key limit.
    public static func byType(_ zoneKey: [UInt8], _ recordType: String, _ recordName: String) -> [UInt8] {
        var key = typePrefix(zoneKey, recordType, reserving: recordName.utf8.count)
        key += recordName.utf8
        return key
    }

    /// The `byType` prefix of one type in one zone, with room for `extra` more bytes
    /// (a name, so a by-type key is one allocation). The type's hash is the one the
    /// index keys use (``IndexKeys/hash8(_:)``), remembered rather than computed per
    /// saved or deleted record.
    public static func typePrefix(_ zoneKey: [UInt8], _ recordType: String, reserving extra: Int = 0) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(typePrefixLength(zoneKey) + extra)
        key += zoneKey
        key += IndexKeys.hash8(recordType)
        return key
    }

    /// How long a ``typePrefix(_:_:reserving:)`` of the zone `zoneKey` is: the part of a
    /// `byType` key before the record name, which the field keys a record keeps in its
    /// entry share with it (``KeptEntries``).
    public static func typePrefixLength(_ zoneKey: [UInt8]) -> Int { zoneKey.count + 8 }

    /// `zones`: database key ‖ zone key, from keys already derived (a `FeedKeyCache`'s:
    /// each derivation is a SHA-256, and every commit looks its zones up).
    public static func zone(databaseKey: [UInt8], zoneKey: [UInt8]) -> [UInt8] {
        databaseKey + zoneKey
    }

    /// `subscriptions`: database key ‖ subscription ID.
    public static func subscription(_ database: DatabaseID, _ subscriptionID: String) -> [UInt8] {
        FeedKeys.database(database) + Array(subscriptionID.utf8)
    }

    /// `usage`: string container (varint length ‖ UTF-8) ‖ payer's record name; with
    /// `user` `nil`, the container's total alone. The length prefix keeps a container's
    /// rows together and apart from any other container whose name it begins.
    public static func usage(container: String, user: String?) -> [UInt8] {
        var writer = BinaryWriter(capacity: container.utf8.count + (user?.utf8.count ?? 0) + 2)
        writer.string(container)
        if let user { writer.raw(user.utf8) }
        return writer.bytes
    }
}
