import CumulusLog
import CumulusModel
import CumulusStorage

/// Shares (`Docs/DATA-MODEL.md`, "Sharing"): the share state each `shareSaved` event carries, the short GUID
/// index, and each participant's list of shared zones, kept in the transaction that
/// applies the event — so a read at any snapshot, on any node, sees the access that
/// commit left, ordered with the records it governs.
extension Views {
    /// The key of a user's shared zones: their shared database's key. Participants are
    /// per container environment, as their shared databases are.
    static func participantKey(_ owner: DatabaseID, user: String) -> [UInt8] {
        FeedKeys.database(
            DatabaseID(container: owner.container, environment: owner.environment, scope: .shared, owner: user))
    }

    private func shareKey(_ database: DatabaseID, _ zoneID: ZoneID, _ recordName: String) -> [UInt8] {
        ViewKeys.record(zoneKeys.zone(database, zoneID), recordName)
    }

    /// Stores `share` and brings each named user's shared zones up to date.
    func saveShare(_ share: Share, in database: DatabaseID, sequence: UInt64, _ txn: LMDBWriteTransaction) throws {
        let key = shareKey(database, share.zoneID, share.recordName)
        let old = try txn.withValue(tables.shares, key: key) { try ShareCodec.decode(Array($0)) }
        try txn.put(tables.shares, key: key, value: ShareCodec.encode(share))
        if let old, old.shortGUID != share.shortGUID { _ = try txn.delete(tables.shareGUIDs, key: Array(old.shortGUID.utf8)) }
        var location = BinaryWriter(capacity: 96)
        location.databaseID(database)
        location.zoneID(share.zoneID)
        location.string(share.recordName)
        try txn.put(tables.shareGUIDs, key: Array(share.shortGUID.utf8), value: location.bytes)
        let users = Set((old?.participants ?? []).map(\.userRecordName) + share.participants.map(\.userRecordName))
        for user in users.sorted() where user != database.owner {
            try refreshSharedZone(of: user, database, share.zoneID, sequence: sequence, txn)
        }
    }

    /// Removes the share `recordName`; its participants lose what it opened.
    func deleteShare(
        _ recordName: String, zoneID: ZoneID, in database: DatabaseID, sequence: UInt64, _ txn: LMDBWriteTransaction
    ) throws {
        let key = shareKey(database, zoneID, recordName)
        guard let old = try txn.withValue(tables.shares, key: key, { try ShareCodec.decode(Array($0)) }) else { return }
        _ = try txn.delete(tables.shares, key: key)
        _ = try txn.delete(tables.shareGUIDs, key: Array(old.shortGUID.utf8))
        for user in Set(old.participants.map(\.userRecordName)).sorted() where user != database.owner {
            try refreshSharedZone(of: user, database, zoneID, sequence: sequence, txn)
        }
    }

    /// Removes every share of a deleted zone (the zone deletion removes the records).
    func deleteShares(inZone zoneID: ZoneID, of database: DatabaseID, sequence: UInt64, _ txn: LMDBWriteTransaction) throws {
        for share in try shares(inZone: zoneID, of: database, txn) {
            try deleteShare(share.recordName, zoneID: zoneID, in: database, sequence: sequence, txn)
        }
    }

    /// Recomputes `user`'s access to `zoneID` from every share of it, and records the
    /// commit when it changes (what the user's database changes report).
    private func refreshSharedZone(
        of user: String, _ database: DatabaseID, _ zoneID: ZoneID, sequence: UInt64, _ txn: LMDBWriteTransaction
    ) throws {
        let best = try shares(inZone: zoneID, of: database, txn).compactMap { $0.access(for: user) }.max()
        let key = Self.participantKey(database, user: user) + zoneKeys.zone(database, zoneID)
        let current = try txn.withValue(tables.sharedZones, key: key) { try SharedZone(decoding: $0) }
        let next: SharedZone?
        if let best {
            next = current?.status == .accepted && current?.permission == best
                ? nil
                : SharedZone(ownerDatabase: database, zoneID: zoneID, status: .accepted, permission: best, changedAt: sequence)
        } else if let current, current.status == .accepted {
            next = SharedZone(
                ownerDatabase: database, zoneID: zoneID, status: .removed, permission: current.permission,
                changedAt: sequence)
        } else {
            next = nil
        }
        if let next { try txn.put(tables.sharedZones, key: key, value: next.encoded) }
    }

    // MARK: - Reading

    /// The share `recordName` of `zoneID`, if it exists.
    public func share(
        _ recordName: String, zoneID: ZoneID, in database: DatabaseID, _ txn: LMDBReadTransaction
    ) throws -> Share? {
        try txn.withValue(tables.shares, key: shareKey(database, zoneID, recordName)) { try ShareCodec.decode(Array($0)) }
    }

    /// Every share of `zoneID` (a zone-wide one, or any number of hierarchy shares).
    public func shares(inZone zoneID: ZoneID, of database: DatabaseID, _ txn: LMDBReadTransaction) throws -> [Share] {
        var found: [Share] = []
        try txn.scan(tables.shares, prefix: zoneKeys.zone(database, zoneID)) { _, value in
            found.append(try ShareCodec.decode(Array(value)))
            return true
        }
        return found
    }

    /// The share a short GUID names, with its owner's database.
    public func share(shortGUID: String, _ txn: LMDBReadTransaction) throws -> (database: DatabaseID, share: Share)? {
        guard !shortGUID.isEmpty, shortGUID.utf8.count <= 200 else { return nil }
        guard let location = try txn.withValue(tables.shareGUIDs, key: Array(shortGUID.utf8), { buffer in
            var reader = BinaryReader(buffer, context: "share location")
            return (try reader.databaseID(), try reader.zoneID(), try reader.string())
        }) else { return nil }
        guard let share = try share(location.2, zoneID: location.1, in: location.0, txn) else { return nil }
        return (location.0, share)
    }

    /// The zones of `sharedDatabase` (a user's shared database): accepted ones and
    /// those they lost, with when.
    public func sharedZones(of sharedDatabase: DatabaseID, _ txn: LMDBReadTransaction) throws -> [SharedZone] {
        var found: [SharedZone] = []
        try txn.scan(tables.sharedZones, prefix: FeedKeys.database(sharedDatabase)) { _, value in
            found.append(try SharedZone(decoding: value))
            return true
        }
        return found
    }

    /// `user`'s row for `zoneID` of `ownerDatabase`, if they ever had it.
    public func sharedZone(
        of user: String, _ ownerDatabase: DatabaseID, _ zoneID: ZoneID, _ txn: LMDBReadTransaction
    ) throws -> SharedZone? {
        let key = Self.participantKey(ownerDatabase, user: user) + zoneKeys.zone(ownerDatabase, zoneID)
        return try txn.withValue(tables.sharedZones, key: key) { try SharedZone(decoding: $0) }
    }
}
