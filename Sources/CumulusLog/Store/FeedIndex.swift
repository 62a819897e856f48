import CumulusModel
import CumulusStorage

/// Maintains the per-zone and per-database feed indexes as commits are appended,
/// and reads them back. Both are derived from the commits alone.
///
/// ```
/// zoneFeed   zoneKey(16) ‖ zone sequence (u64 BE)      → u64 global sequence ‖ varint n ‖ n × (u8 kind ‖ string record name)
/// zoneHeads  zoneKey(16)                               → u64 last zone sequence ‖ database ID ‖ zone ID
/// dbFeed     databaseKey(16) ‖ db sequence (u64 BE)    → u64 global sequence ‖ varint n ‖ n × (u8 kind ‖ zone ID?)
/// dbHeads    databaseKey(16)                           → u64 last database sequence ‖ database ID
/// ```
struct FeedIndex {
    let zoneFeed: LMDBTable
    let zoneHeads: LMDBTable
    let databaseFeed: LMDBTable
    let databaseHeads: LMDBTable
    /// Recently derived feed keys (shared by every copy of this index).
    let keys = FeedKeyCache()

    enum ZoneKind: UInt8 {
        case saved = 1, deleted = 2, tagBumped = 3, zoneSaved = 4, zoneDeleted = 5
    }

    enum DatabaseKind: UInt8 {
        case zoneChanged = 1, zoneDeleted = 2, databaseChanged = 3
    }

    /// A commit's feed positions with the feed keys they were looked up by, so
    /// ``index(_:positions:in:)`` need not derive the keys (two SHA-256 each) again.
    struct Positions {
        var zones: [ZoneSequence] = []
        var databases: [DatabaseSequence] = []
        /// `FeedKeys.zone` of each of `zones`, in the same order.
        var zoneKeys: [[UInt8]] = []
        /// `FeedKeys.database` of each of `databases`, in the same order.
        var databaseKeys: [[UInt8]] = []
    }

    /// The feed heads an append session has advanced and not yet stored, by feed key.
    ///
    /// **Why.** Every commit advances its zone's and database's heads, and the next
    /// commit of the same zone reads them back: in a batch of thousands of commits to
    /// one zone (a replay, a follower's batch, a bulk import) that was two B-tree reads
    /// and two writes per commit of the same two entries. The session keeps them here
    /// and stores each once, when it finishes (``write(_:in:)``). Nothing reads the
    /// heads inside an append's transaction but the appends themselves.
    struct PendingHeads {
        var zones: [HashedBytes: ZoneSequence] = [:]
        var databases: [HashedBytes: DatabaseSequence] = [:]
    }

    /// The next zone and database positions for `events`: the heads `pending` holds,
    /// or else as `txn` has them.
    func positions(for events: [Event], pending: PendingHeads, in txn: LMDBReadTransaction) throws -> Positions {
        var result = Positions()
        for (database, zone) in Commit.touchedZones(of: events) {
            let key = keys.zone(database, zone)
            let last = try pending.zones[HashedBytes(key)]?.sequence ?? lastPosition(zoneHeads, key: key, in: txn)
            result.zones.append(ZoneSequence(database: database, zoneID: zone, sequence: last + 1))
            result.zoneKeys.append(key)
        }
        for database in Commit.touchedDatabases(of: events) {
            let key = keys.database(database)
            let last = try pending.databases[HashedBytes(key)]?.sequence ?? lastPosition(databaseHeads, key: key, in: txn)
            result.databases.append(DatabaseSequence(database: database, sequence: last + 1))
            result.databaseKeys.append(key)
        }
        return result
    }

    /// Stores the heads `pending` holds.
    func write(_ pending: PendingHeads, in txn: LMDBWriteTransaction) throws {
        for (key, position) in pending.zones {
            var head = BinaryWriter(capacity: 96)
            head.u64(position.sequence)
            head.databaseID(position.database)
            head.zoneID(position.zoneID)
            try txn.put(zoneHeads, key: key.bytes, value: head.bytes)
        }
        for (key, position) in pending.databases {
            var head = BinaryWriter(capacity: 64)
            head.u64(position.sequence)
            head.databaseID(position.database)
            try txn.put(databaseHeads, key: key.bytes, value: head.bytes)
        }
    }

    /// Writes `commit`'s entries and advances the heads in `pending`. `positions` must
    /// be what ``positions(for:pending:in:)`` returned for the commit's events (the
    /// commit carries the same sequences; the keys are taken from it).
    func index(_ commit: Commit, positions: Positions, pending: inout PendingHeads, in txn: LMDBWriteTransaction) throws {
        for (position, zoneKey) in zip(commit.zoneSequences, positions.zoneKeys) {
            var value = BinaryWriter(capacity: 64)
            value.u64(commit.sequence)
            // Counted first, then written, so no array of changes is built per commit.
            var count = 0
            for event in commit.events where Self.zoneKind(of: event) != nil && event.zoneID == position.zoneID
                && event.database == position.database
            {
                count += 1
            }
            value.length(count)
            for event in commit.events {
                guard let kind = Self.zoneKind(of: event), event.zoneID == position.zoneID,
                    event.database == position.database
                else { continue }
                value.u8(kind.rawValue)
                switch event {
                case .recordSaved(_, let record, _): value.string(record.recordID.recordName)
                case .recordDeleted(_, let id, _, _), .changeTagBumped(_, let id, _, _): value.string(id.recordName)
                default: value.string("")
                }
            }
            try txn.put(zoneFeed, key: Self.entryKey(zoneKey, position.sequence), value: value.bytes, flags: .noOverwrite)
            pending.zones[HashedBytes(zoneKey)] = position
        }
        // Only commits deleting a zone need the set of deleted zones.
        let deletesZones = commit.events.contains { if case .zoneDeleted = $0 { true } else { false } }
        for (position, databaseKey) in zip(commit.databaseSequences, positions.databaseKeys) {
            var value = BinaryWriter(capacity: 64)
            value.u64(commit.sequence)
            let zones = commit.zoneSequences.filter { $0.database == position.database }
            let deleted: Set<ZoneID> = deletesZones ? Set(commit.events.compactMap { event -> ZoneID? in
                if case .zoneDeleted(let database, let zone) = event, database == position.database { return zone }
                return nil
            }) : []
            let databaseWide = commit.events.contains { $0.database == position.database && $0.zoneID == nil }
            value.length(zones.count + (databaseWide ? 1 : 0))
            for zone in zones {
                value.u8(deleted.contains(zone.zoneID) ? DatabaseKind.zoneDeleted.rawValue : DatabaseKind.zoneChanged.rawValue)
                value.zoneID(zone.zoneID)
            }
            if databaseWide { value.u8(DatabaseKind.databaseChanged.rawValue) }
            try txn.put(
                databaseFeed, key: Self.entryKey(databaseKey, position.sequence), value: value.bytes,
                flags: .noOverwrite)
            pending.databases[HashedBytes(databaseKey)] = position
        }
    }

    /// The zone feed kind of `event`, or `nil` for events not in zone feeds.
    private static func zoneKind(of event: Event) -> ZoneKind? {
        switch event {
        case .recordSaved: .saved
        case .recordDeleted: .deleted
        case .changeTagBumped: .tagBumped
        case .zoneSaved: .zoneSaved
        case .zoneDeleted: .zoneDeleted
        case .subscriptionSaved, .subscriptionDeleted, .dictionaryInstalled, .schemaChanged, .schemaExtended,
            .rolesAssigned, .epochBegan, .shareSaved, .shareDeleted:
            nil
        }
    }

    /// A feed entry key, `prefix ‖ u64 position`, built in one allocation.
    private static func entryKey(_ prefix: [UInt8], _ position: UInt64) -> [UInt8] {
        var key = [UInt8]()
        key.reserveCapacity(prefix.count + 8)
        key.append(contentsOf: prefix)
        BigEndian.append(position, to: &key)
        return key
    }

    private func lastPosition(_ table: LMDBTable, key: [UInt8], in txn: LMDBReadTransaction) throws -> UInt64 {
        try txn.withValue(table, key: key) { value in
            var reader = BinaryReader(value, context: "feed head")
            return try reader.u64()
        } ?? 0
    }

    /// The zone's feed after position `after`, at most `limit` entries.
    func zoneEntries(
        _ database: DatabaseID, _ zone: ZoneID, after: UInt64, limit: Int, in txn: LMDBReadTransaction
    ) throws -> [ZoneFeedEntry] {
        let zoneKey = keys.zone(database, zone)
        var entries: [ZoneFeedEntry] = []
        guard limit > 0, after < UInt64.max else { return entries }
        try txn.scan(zoneFeed, from: zoneKey + BigEndian.bytes(after + 1), to: OrderedEncoding.prefixUpperBound(zoneKey)) { key, value in
            var keyReader = BinaryReader(UnsafeRawBufferPointer(rebasing: key[FeedKeys.length...]), context: "zone feed key")
            let position = try keyReader.u64()
            var reader = BinaryReader(value, context: "zone feed entry")
            let sequence = try reader.u64()
            var changes: [ZoneFeedEntry.Change] = []
            for _ in 0..<(try reader.length(minimumItemSize: 2)) {
                let rawKind = try reader.u8()
                let name = try reader.string()
                switch ZoneKind(rawValue: rawKind) {
                case .saved: changes.append(.saved(recordName: name))
                case .deleted: changes.append(.deleted(recordName: name))
                case .tagBumped: changes.append(.tagBumped(recordName: name))
                case .zoneSaved: changes.append(.zoneSaved)
                case .zoneDeleted: changes.append(.zoneDeleted)
                case nil: throw reader.failure("unknown zone change kind \(rawKind)")
                }
            }
            entries.append(ZoneFeedEntry(zoneSequence: position, sequence: sequence, changes: changes))
            return entries.count < limit
        }
        return entries
    }

    /// The database's feed after position `after`, at most `limit` entries.
    func databaseEntries(
        _ database: DatabaseID, after: UInt64, limit: Int, in txn: LMDBReadTransaction
    ) throws -> [DatabaseFeedEntry] {
        let databaseKey = keys.database(database)
        var entries: [DatabaseFeedEntry] = []
        guard limit > 0, after < UInt64.max else { return entries }
        try txn.scan(databaseFeed, from: databaseKey + BigEndian.bytes(after + 1), to: OrderedEncoding.prefixUpperBound(databaseKey)) {
            key, value in
            var keyReader = BinaryReader(
                UnsafeRawBufferPointer(rebasing: key[FeedKeys.length...]), context: "database feed key")
            let position = try keyReader.u64()
            var reader = BinaryReader(value, context: "database feed entry")
            let sequence = try reader.u64()
            var changes: [DatabaseFeedEntry.Change] = []
            for _ in 0..<(try reader.length()) {
                let rawKind = try reader.u8()
                switch DatabaseKind(rawValue: rawKind) {
                case .zoneChanged: changes.append(.zoneChanged(try reader.zoneID()))
                case .zoneDeleted: changes.append(.zoneDeleted(try reader.zoneID()))
                case .databaseChanged: changes.append(.databaseChanged)
                case nil: throw reader.failure("unknown database change kind \(rawKind)")
                }
            }
            entries.append(DatabaseFeedEntry(databaseSequence: position, sequence: sequence, changes: changes))
            return entries.count < limit
        }
        return entries
    }

    /// The zone feed position of commit `sequence` in that zone, or `nil` if the commit
    /// did not touch it. A binary search: positions and global sequences grow together.
    func zonePosition(
        ofCommit sequence: UInt64, _ database: DatabaseID, _ zone: ZoneID, in txn: LMDBReadTransaction
    ) throws -> UInt64? {
        let zoneKey = keys.zone(database, zone)
        var (low, high) = (UInt64(1), try lastPosition(zoneHeads, key: zoneKey, in: txn))
        while low <= high {
            let middle = low + (high - low) / 2
            let found = try txn.withValue(zoneFeed, key: Self.entryKey(zoneKey, middle)) { value in
                var reader = BinaryReader(value, context: "zone feed entry")
                return try reader.u64()
            }
            guard let found else { throw LogError.storage("zone feed has no entry at position \(middle)") }
            if found == sequence { return middle }
            if found < sequence { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// The last position of a zone's feed (0 if it has none).
    func zoneHead(_ database: DatabaseID, _ zone: ZoneID, in txn: LMDBReadTransaction) throws -> UInt64 {
        try lastPosition(zoneHeads, key: keys.zone(database, zone), in: txn)
    }

    /// The last position of a database's feed (0 if it has none).
    func databaseHead(_ database: DatabaseID, in txn: LMDBReadTransaction) throws -> UInt64 {
        try lastPosition(databaseHeads, key: keys.database(database), in: txn)
    }
}
