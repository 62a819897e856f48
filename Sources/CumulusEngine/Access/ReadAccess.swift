import CumulusModel
import CumulusStorage
import CumulusViews

/// Who may read which public records: the schema's READ grants, per record type,
/// for the acting user's roles (`Docs/SCHEMA.md`, "Security roles (public
/// database)"). Private and shared
/// databases are their owner's alone (``AccessPolicy``); grants do not apply there.
struct ReadAccess {
    let database: DatabaseID
    let schema: EffectiveSchema
    let actor: String?
    let roles: Set<String>

    /// The read rules of `actor` in `database`, as `txn` sees the schema and roles.
    init(views: Views, database: DatabaseID, schema: EffectiveSchema, actor: String?, txn: LMDBReadTransaction) throws {
        self.database = database
        self.schema = schema
        self.actor = actor
        let assigned = try actor.map { try views.roles(of: $0, in: SchemaID(database), txn) } ?? []
        roles = EffectiveSchema.roles(of: actor, assigned: assigned)
    }

    /// Whether the record stored as `stored` may be read: `nil` when it may, its type
    /// when it may not. Read from the header alone, and only in the public database
    /// (private and shared ones need no grant).
    func denial(_ stored: UnsafeRawBufferPointer) throws -> String? {
        guard database.scope == .public else { return nil }
        let reader = try RecordReader(stored)
        let allowed = schema.allows(
            .read, on: reader.recordType, roles: roles, actor: actor, creator: try reader.creatorName())
        return allowed ? nil : reader.recordType
    }

    /// For a query on `type`: `nil` when every record may be read; the actor's name
    /// when only their own may (READ granted to `_creator` alone). Throws
    /// `permissionFailure` when none may.
    func queryScope(_ type: String) throws -> String? {
        guard database.scope == .public else { return nil }
        if schema.allows(.read, on: type, roles: roles, actor: actor, creator: nil) { return nil }
        if let actor, !actor.isEmpty, schema.grants(of: type).grants(.read, to: SecurityRole.creator) { return actor }
        throw CumulusError(
            .permissionFailure, "you may not read records of type \(type) in the public database (no READ grant)")
    }
}
