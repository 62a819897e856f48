import CumulusLog
import CumulusModel
import CumulusStorage

/// Schemas, security roles and the index builds a schema change causes.
extension Views {
    /// The schema of a container environment with its rules, as `txn` sees it.
    public func schema(_ id: SchemaID, in txn: LMDBReadTransaction) throws -> EffectiveSchema {
        try schemaCatalog.schema(id, table: tables.schemas, in: txn)
    }

    /// ``schema(_:in:)`` with its stamp (``StampedSchema``): what the planner checks
    /// work done ahead against, and what a caller coerces and derives a request's
    /// records under before the writer sees them (``deriveContent(of:in:schema:)``).
    /// Such a caller, reading a snapshot that may be older than the writer's, passes
    /// `remember: false`, so that it never makes the writer parse the schema again.
    public func stampedSchema(_ id: SchemaID, in txn: LMDBReadTransaction, remember: Bool = true) throws
        -> StampedSchema
    {
        try schemaCatalog.stampedSchema(id, table: tables.schemas, in: txn, remember: remember)
    }

    /// The custom roles assigned to `user` in a container environment (sorted).
    public func roles(of user: String, in id: SchemaID, _ txn: LMDBReadTransaction) throws -> [String] {
        try txn.withValue(tables.userRoles, key: SchemaCatalog.key(id) + Array(user.utf8)) { buffer in
            var reader = BinaryReader(buffer, context: "user roles")
            var roles: [String] = []
            for _ in 0..<(try reader.length(minimumItemSize: 1)) { roles.append(try reader.string()) }
            return roles
        } ?? []
    }

    /// Every user with custom roles in a container environment, with their roles.
    public func roleAssignments(in id: SchemaID, _ txn: LMDBReadTransaction) throws -> [(user: String, roles: [String])] {
        let prefix = SchemaCatalog.key(id)
        var users: [String] = []
        try txn.scan(tables.userRoles, prefix: prefix) { key, _ in
            users.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[prefix.count...]), as: UTF8.self))
            return true
        }
        return try users.map { ($0, try roles(of: $0, in: id, txn)) }
    }

    /// Notes each zone `commit` touches under its container environment, so an index
    /// build can find every record of a type without scanning the whole records table.
    func registerZones(of commit: Commit, _ txn: LMDBWriteTransaction) throws {
        for position in commit.zoneSequences {
            let key = SchemaCatalog.key(SchemaID(position.database)) + zoneKeys.zone(position.database, position.zoneID)
            if try !txn.contains(tables.schemaZones, key: key) {
                try txn.put(tables.schemaZones, key: key, value: [UInt8]())
            }
        }
    }

    /// Forgets the deleted zone `zoneKey` among the zones of `id`.
    func forgetZone(_ zoneKey: [UInt8], of id: SchemaID, _ txn: LMDBWriteTransaction) throws {
        _ = try txn.delete(tables.schemaZones, key: SchemaCatalog.key(id) + zoneKey)
    }

    /// Replaces the schema of `id` with the logged schema text `text`.
    func replaceSchema(_ id: SchemaID, withText text: String, _ txn: LMDBWriteTransaction) throws {
        let schema: Schema
        do {
            schema = try SchemaParser.parse(text)
        } catch {
            throw CumulusError(.internalError, "a logged schema of \(id) does not parse: \(error)")
        }
        try replaceSchema(id, with: schema, txn)
    }

    /// Stores the security roles of `user` in the schema `id`; none removes the entry.
    func assignRoles(_ roles: [String], to user: String, in id: SchemaID, _ txn: LMDBWriteTransaction) throws {
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

    /// Stores `schema` for `id` and rebuilds the index entries of every record type
    /// whose index options it changes (added indexes filled, dropped ones removed),
    /// inside the transaction applying the event — so a rebuild or a follower ends in
    /// the same state as the leader.
    func replaceSchema(_ id: SchemaID, with schema: Schema, _ txn: LMDBWriteTransaction) throws {
        let old = try self.schema(id, in: txn)
        let new = EffectiveSchema(schema, environment: id.environment)
        try schemaCatalog.store(schema, id, table: tables.schemas, in: txn)
        var types = Set(old.schema.recordTypes.map(\.name))
        types.formUnion(new.schema.recordTypes.map(\.name))
        let changed = types.sorted().filter { !old.indexDifferences(to: new, in: $0).isEmpty }
        // Reindexing moves each record's token entries from its kept side straight in
        // `tokenIndex`, which holds that side only with nothing pending.
        if !changed.isEmpty { try mergePendingTokens(txn) }
        for type in changed {
            try reindex(type, in: id, to: new, txn)
        }
    }

    private func reindex(
        _ type: String, in id: SchemaID, to new: EffectiveSchema, _ txn: LMDBWriteTransaction
    ) throws {
        let prefix = SchemaCatalog.key(id)
        var zoneKeys: [[UInt8]] = []
        try txn.scan(tables.schemaZones, prefix: prefix) { key, _ in
            zoneKeys.append(Array(key[prefix.count...]))
            return true
        }
        var rebuilt = 0
        for zoneKey in zoneKeys {
            let names = try recordNames(ofType: type, zoneKey: zoneKey, in: txn)
            for name in names {
                guard let record = try storedRecord(at: ViewKeys.record(zoneKey, name), txn) else { continue }
                try reindexEntries(of: record, to: new, zoneKey: zoneKey, txn)
                rebuilt += 1
                if rebuilt % 10_000 == 0 { indexBuildObserver?(id, type, rebuilt) }
            }
        }
        if rebuilt > 0 { indexBuildObserver?(id, type, rebuilt) }
    }
}
