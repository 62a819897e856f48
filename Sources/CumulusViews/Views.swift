import CumulusLog
import CumulusModel
import CumulusStorage

/// The projections of the log (DESIGN.md): current records, the reference graph in
/// both directions, records by type, zones and subscriptions.
///
/// ``apply(_:in:)`` is the one way state is derived from the log. The leader's
/// writer calls it for each commit inside the transaction that appends it, a
/// follower for each frame it receives, and ``ViewRebuilder`` for every commit of
/// the log — so the three can never disagree about what a commit means.
///
/// Readers take any transaction (read or write) of the same environment; what they
/// return is a copy, valid after the transaction ends.
public final class Views: Sendable {
    /// The tables.
    public let tables: ViewTables
    /// Decoded subscription definitions, so matching does not decode per event.
    let subscriptionCache = SubscriptionCache()
    /// Parsed schemas, keyed by their stored bytes.
    let schemaCatalog = SchemaCatalog()

    /// Told of index builds a schema change causes (schema, record type, records
    /// done so far), every 10,000 records and at the end of each type; called on the
    /// thread applying the change, inside its transaction, so it must be quick.
    public let indexBuildObserver: (@Sendable (SchemaID, String, Int) -> Void)?

    /// Opens the views in `environment` (the log's own, so one transaction covers both).
    public init(environment: LMDBEnvironment, indexBuildObserver: (@Sendable (SchemaID, String, Int) -> Void)? = nil) throws {
        tables = try ViewTables(environment: environment)
        self.indexBuildObserver = indexBuildObserver
    }

    // MARK: - Applying commits

    /// Applies every event of `commit`, in order.
    public func apply(_ commit: Commit, in txn: LMDBWriteTransaction) throws {
        try registerZones(of: commit, txn)
        var firing = Firing(commit: commit)
        // Without any subscription (an O(1) count) matching costs nothing; the count
        // is taken again after a subscription is saved within the commit.
        var anySubscriptions: Bool?
        for event in commit.events {
            if anySubscriptions == nil { anySubscriptions = try txn.count(tables.subscriptionIndex) > 0 }
            // Match first: subscriptions compare the state before the event with after.
            if anySubscriptions == true { try notify(event, &firing, txn) }
            try apply(event, sequence: commit.sequence, in: txn)
            if case .subscriptionSaved = event { anySubscriptions = nil }
        }
        if let token = commit.clientChangeTokenData {
            var value = BinaryWriter(capacity: 16 + token.count)
            value.u64(commit.sequence)
            value.blob(token)
            for position in commit.zoneSequences {
                let key = FeedKeys.zone(position.database, position.zoneID) + Array(commit.actor.utf8)
                if try txn.withValue(tables.zones, key: ViewKeys.zone(position.database, position.zoneID), { _ in true }) != nil
                    || position.zoneID.isDefaultZone
                {
                    try txn.put(tables.clientTokens, key: key, value: value.bytes)
                }
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

    func apply(_ event: Event, sequence: UInt64, in txn: LMDBWriteTransaction) throws {
        switch event {
        case .recordSaved(let database, let record, _):
            try saveRecord(record, in: database, txn)
        case .recordDeleted(let database, let recordID, let recordType, _):
            try deleteRecord(recordID, recordType: recordType, in: database, txn)
        case .changeTagBumped(let database, let recordID, let changeTag, _):
            let key = ViewKeys.record(FeedKeys.zone(database, recordID.zoneID), recordID.recordName)
            guard let bumped = try txn.withValue(tables.records, key: key, {
                try RecordReader($0).replacingChangeTag(with: changeTag)
            }) else { return }
            try txn.put(tables.records, key: key, value: bumped)
        case .zoneSaved(let database, let zone):
            let key = ViewKeys.zone(database, zone.zoneID)
            let incarnation = try txn.withValue(tables.zones, key: key) { try Self.decodeZone($0).incarnation } ?? sequence
            try txn.put(tables.zones, key: key, value: Self.encodeZone(StoredZone(zone: zone, incarnation: incarnation), database))
        case .zoneDeleted(let database, let zoneID):
            try deleteZone(zoneID, in: database, txn)
        case .subscriptionSaved(let database, let subscriptionID, let definition):
            try saveSubscription(database, subscriptionID, definition: definition, txn)
        case .subscriptionDeleted(let database, let subscriptionID):
            try removeSubscription(database, subscriptionID, txn)
        case .dictionaryInstalled:
            break  // the log keeps dictionaries itself
        case .schemaChanged(let id, let text, _):
            let schema: Schema
            do {
                schema = try SchemaParser.parse(text)
            } catch {
                throw CumulusError(.internalError, "a logged schema of \(id) does not parse: \(error)")
            }
            try replaceSchema(id, with: schema, txn)
        case .schemaExtended(let id, let recordType, let fields):
            let current = try schema(id, in: txn)
            try replaceSchema(id, with: current.extended(type: recordType, with: fields), txn)
        case .rolesAssigned(let id, let user, let roles):
            let key = SchemaCatalog.key(id) + Array(user.utf8)
            if roles.isEmpty {
                _ = try txn.delete(tables.userRoles, key: key)
            } else {
                var writer = BinaryWriter(capacity: 16 * roles.count)
                writer.length(roles.count)
                for role in roles { writer.string(role) }
                try txn.put(tables.userRoles, key: key, value: writer.bytes)
            }
        }
    }

    private func saveRecord(_ record: Record, in database: DatabaseID, _ txn: LMDBWriteTransaction) throws {
        let schema = try schema(SchemaID(database), in: txn)
        let zoneKey = FeedKeys.zone(database, record.recordID.zoneID)
        let name = record.recordID.recordName
        let key = ViewKeys.record(zoneKey, name)
        let old = try indexedPart(at: key, schema, txn)
        let oldReferences = try outgoing(zoneKey, name, in: txn)
        let newReferences = OutgoingReference.of(record)
        try replaceReferences(zoneKey, source: name, old: oldReferences, new: newReferences, txn)
        if let old, old.recordType != record.recordType {
            _ = try txn.delete(tables.byType, key: ViewKeys.byType(zoneKey, old.recordType, name))
        }
        if old?.recordType != record.recordType {
            try txn.put(tables.byType, key: ViewKeys.byType(zoneKey, record.recordType, name), value: [UInt8]())
        }
        try replaceEntries(
            tables.fieldIndex, old: old.map { IndexKeys.fieldEntries(of: $0, zoneKey: zoneKey, schema: schema) } ?? [],
            new: IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema), txn)
        try replaceEntries(
            tables.tokenIndex, old: old.map { IndexKeys.tokenEntries(of: $0, zoneKey: zoneKey, schema: schema) } ?? [],
            new: IndexKeys.tokenEntries(of: record, zoneKey: zoneKey, schema: schema), txn)
        var stored = record
        stored.clearChangedKeys()
        try txn.put(tables.records, key: key, value: try RecordCodec.encode(stored))
    }

    /// The record stored under `key` with only the fields `schema` indexes decoded:
    /// all its index entries need, at a fraction of a full decode when few fields
    /// are indexed (production).
    private func indexedPart(at key: [UInt8], _ schema: EffectiveSchema, _ txn: LMDBReadTransaction) throws -> Record? {
        try txn.withValue(tables.records, key: key) { buffer in
            let reader = try RecordReader(buffer)
            let type = reader.recordType
            return try reader.record(keepingFields: { schema.hasIndexes(onField: $0, in: type) })
        }
    }

    /// Deletes the keys only in `old`, adds those only in `new` (both sorted and
    /// unique), in one merge walk.
    func replaceEntries(_ table: LMDBTable, old: [[UInt8]], new: [[UInt8]], _ txn: LMDBWriteTransaction) throws {
        guard old != new else { return }
        var i = 0
        var j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && old[i].lexicographicallyPrecedes(new[j])) {
                _ = try txn.delete(table, key: old[i])
                i += 1
            } else if i == old.count || new[j].lexicographicallyPrecedes(old[i]) {
                try txn.put(table, key: new[j], value: [UInt8]())
                j += 1
            } else {
                i += 1
                j += 1
            }
        }
    }

    private func deleteRecord(_ id: RecordID, recordType: String, in database: DatabaseID, _ txn: LMDBWriteTransaction)
        throws
    {
        let zoneKey = FeedKeys.zone(database, id.zoneID)
        let name = id.recordName
        let schema = try schema(SchemaID(database), in: txn)
        if let old = try indexedPart(at: ViewKeys.record(zoneKey, name), schema, txn) {
            try replaceEntries(
                tables.fieldIndex, old: IndexKeys.fieldEntries(of: old, zoneKey: zoneKey, schema: schema), new: [], txn)
            try replaceEntries(
                tables.tokenIndex, old: IndexKeys.tokenEntries(of: old, zoneKey: zoneKey, schema: schema), new: [], txn)
        }
        try replaceReferences(zoneKey, source: name, old: try outgoing(zoneKey, name, in: txn), new: [], txn)
        _ = try txn.delete(tables.byType, key: ViewKeys.byType(zoneKey, recordType, name))
        _ = try txn.delete(tables.records, key: ViewKeys.record(zoneKey, name))
    }

    private func deleteZone(_ zoneID: ZoneID, in database: DatabaseID, _ txn: LMDBWriteTransaction) throws {
        let zoneKey = FeedKeys.zone(database, zoneID)
        for table in [
            tables.records, tables.refsIn, tables.refsOut, tables.byType, tables.fieldIndex, tables.tokenIndex,
            tables.clientTokens,
        ] {
            // Collect, then delete: a table must not change under its own scan.
            while true {
                var keys: [[UInt8]] = []
                try txn.scan(table, prefix: zoneKey) { key, _ in
                    if keys.last.map({ !$0.elementsEqual(key) }) ?? true { keys.append(Array(key)) }
                    return keys.count < 10_000
                }
                if keys.isEmpty { break }
                for key in keys { _ = try txn.delete(table, key: key) }
            }
        }
        _ = try txn.delete(tables.zones, key: ViewKeys.zone(database, zoneID))
        _ = try txn.delete(tables.schemaZones, key: SchemaCatalog.key(SchemaID(database)) + zoneKey)
    }

    private func replaceReferences(
        _ zoneKey: [UInt8], source: String, old: [OutgoingReference], new: [OutgoingReference],
        _ txn: LMDBWriteTransaction
    ) throws {
        guard old != new else { return }
        let oldSet = Set(old)
        let newSet = Set(new)
        let sourceBytes = Array(source.utf8)
        for edge in old where !newSet.contains(edge) {
            _ = try txn.delete(
                tables.refsIn, key: ViewKeys.target(zoneKey, edge.targetName), value: [edge.action.rawValue] + sourceBytes)
        }
        for edge in new where !oldSet.contains(edge) {
            try txn.put(
                tables.refsIn, key: ViewKeys.target(zoneKey, edge.targetName), value: [edge.action.rawValue] + sourceBytes,
                flags: .noDupData)
        }
        let key = ViewKeys.record(zoneKey, source)
        if new.isEmpty {
            _ = try txn.delete(tables.refsOut, key: key)
        } else {
            var writer = BinaryWriter(capacity: 16 * new.count)
            writer.length(new.count)
            for edge in new {
                writer.u8(edge.action.rawValue)
                writer.string(edge.targetName)
            }
            try txn.put(tables.refsOut, key: key, value: writer.bytes)
        }
    }

    // MARK: - Reading

    /// The record with `id` in `database`, or `nil`.
    public func record(_ id: RecordID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Record? {
        try record(zoneKey: FeedKeys.zone(database, id.zoneID), name: id.recordName, txn)
    }

    /// Whether a record with `id` exists in `database`.
    public func recordExists(_ id: RecordID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Bool {
        try txn.contains(tables.records, key: ViewKeys.record(FeedKeys.zone(database, id.zoneID), id.recordName))
    }

    /// The references record `name` holds, from the graph (sorted, unique).
    public func outgoing(_ zoneKey: [UInt8], _ name: String, in txn: LMDBReadTransaction) throws -> [OutgoingReference] {
        try txn.withValue(tables.refsOut, key: ViewKeys.record(zoneKey, name)) { buffer in
            var reader = BinaryReader(buffer, context: "refsOut")
            var edges: [OutgoingReference] = []
            for _ in 0..<(try reader.length(minimumItemSize: 2)) {
                let raw = try reader.u8()
                guard let action = Reference.Action(rawValue: raw) else { throw reader.failure("bad action \(raw)") }
                edges.append(OutgoingReference(targetName: try reader.string(), action: action))
            }
            return edges
        } ?? []
    }

    /// Who refers to record `target` in the zone `zoneKey`: (action, source name) pairs,
    /// grouped by action (none, deleteSelf, validate), sources in byte order.
    public func incoming(_ zoneKey: [UInt8], _ target: String, in txn: LMDBReadTransaction) throws
        -> [(action: Reference.Action, source: String)]
    {
        var result: [(Reference.Action, String)] = []
        try txn.values(tables.refsIn, key: ViewKeys.target(zoneKey, target)) { value in
            guard let raw = value.first, let action = Reference.Action(rawValue: raw) else {
                throw CumulusError(.internalError, "malformed refsIn entry for \(target)")
            }
            result.append((action, String(decoding: UnsafeRawBufferPointer(rebasing: value[1...]), as: UTF8.self)))
            return true
        }
        return result
    }

    /// The stored zone `zoneID` of `database`, or `nil` if it was never created or was deleted.
    public func zone(_ zoneID: ZoneID, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> StoredZone? {
        try txn.withValue(tables.zones, key: ViewKeys.zone(database, zoneID)) { try Self.decodeZone($0) }
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

    /// Names of the records of `recordType` in a zone, in byte order.
    public func recordNames(ofType recordType: String, zoneKey: [UInt8], in txn: LMDBReadTransaction) throws -> [String] {
        let prefix = ViewKeys.typePrefix(zoneKey, recordType)
        var names: [String] = []
        try txn.scan(tables.byType, prefix: prefix) { key, _ in
            names.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[prefix.count...]), as: UTF8.self))
            return true
        }
        return names
    }

    // MARK: - Encodings

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
