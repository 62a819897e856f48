import CumulusLog
import CumulusModel
import CumulusStorage

/// Zones: their stored definitions and incarnations, and the client change tokens
/// kept per zone.
extension Views {
    /// The `zones` table's key of `zoneID` (``ViewKeys/zone(databaseKey:zoneKey:)``),
    /// from the cache of derived keys.
    func zoneRowKey(_ database: DatabaseID, _ zoneID: ZoneID) -> [UInt8] {
        ViewKeys.zone(databaseKey: zoneKeys.database(database), zoneKey: zoneKeys.zone(database, zoneID))
    }

    /// Stores `zone`, keeping the incarnation it was created with (its first save's
    /// sequence): a re-created zone gets a new one, which expires old change tokens.
    func saveZone(_ zone: Zone, in database: DatabaseID, sequence: UInt64, _ txn: LMDBWriteTransaction) throws {
        let key = zoneRowKey(database, zone.zoneID)
        let incarnation = try txn.withValue(tables.zones, key: key) { try Self.decodeZone($0).incarnation } ?? sequence
        try txn.put(tables.zones, key: key, value: Self.encodeZone(StoredZone(zone: zone, incarnation: incarnation), database))
    }

    /// Deletes the zone's row: the zones projection's part of a zone's deletion
    /// beyond its zone-scoped tables (`Views.apply`, which has every projection drop
    /// its own).
    func deleteZone(_ zoneID: ZoneID, in database: DatabaseID, _ txn: LMDBWriteTransaction) throws {
        _ = try txn.delete(tables.zones, key: zoneRowKey(database, zoneID))
    }

    /// Remembers the commit's `clientChangeTokenData` per zone it touched that still
    /// exists, for its actor: what the next changes fetch hands back.
    func storeClientChangeToken(of commit: Commit, _ txn: LMDBWriteTransaction) throws {
        guard let token = commit.clientChangeTokenData else { return }
        var value = BinaryWriter(capacity: 16 + token.count)
        value.u64(commit.sequence)
        value.blob(token)
        for position in commit.zoneSequences {
            let key = zoneKeys.zone(position.database, position.zoneID) + Array(commit.actor.utf8)
            if try txn.withValue(tables.zones, key: zoneRowKey(position.database, position.zoneID), { _ in true }) != nil
                || position.zoneID.isDefaultZone
            {
                try txn.put(tables.clientTokens, key: key, value: value.bytes)
            }
        }
    }

    /// The `clientChangeTokenData` of `actor`'s latest commit in a zone that carried one.
    public func clientChangeToken(_ zoneKey: [UInt8], actor: String, in txn: LMDBReadTransaction) throws -> [UInt8]? {
        try txn.withValue(tables.clientTokens, key: zoneKey + Array(actor.utf8)) { buffer in
            var reader = BinaryReader(buffer, context: "client token")
            _ = try reader.u64()
            return try reader.blob()
        } ?? nil
    }

    /// The stored zone `zoneID` of `database`, or `nil` if it was never created or was deleted.
    public func zone(_ zoneID: ZoneID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> StoredZone? {
        try txn.withValue(tables.zones, key: zoneRowKey(database, zoneID)) { try Self.decodeZone($0) }
    }

    /// Every stored zone of `database`, ordered by zone key.
    public func zones(in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> [StoredZone] {
        var zones: [StoredZone] = []
        try txn.scan(tables.zones, prefix: FeedKeys.database(database)) { _, value in
            zones.append(try Self.decodeZone(value))
            return true
        }
        return zones
    }

    static func encodeZone(_ stored: StoredZone, _ database: DatabaseID) -> [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.u64(stored.incarnation)
        writer.databaseID(database)
        writer.zoneID(stored.zone.zoneID)
        writer.varint(UInt64(stored.zone.capabilities.rawValue))
        return writer.bytes
    }

    static func decodeZone(_ buffer: UnsafeRawBufferPointer) throws -> StoredZone {
        var reader = BinaryReader(buffer, context: "zone view entry")
        let incarnation = try reader.u64()
        _ = try reader.databaseID()
        let zoneID = try reader.zoneID()
        let raw = try reader.varint()
        guard raw <= UInt64(UInt32.max) else { throw reader.failure("capabilities out of range") }
        return StoredZone(zone: Zone(zoneID: zoneID, capabilities: ZoneCapabilities(rawValue: UInt32(raw))), incarnation: incarnation)
    }
}
