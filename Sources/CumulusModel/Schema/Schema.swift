/// A container environment's schema in CloudKit's schema language (`Docs/SCHEMA.md`):
/// custom roles and record types, each with typed fields, index options and grants.
///
/// CloudKit keeps one schema per container and environment, shared by its public,
/// private and shared databases. In development it grows just in time as records are
/// saved; in production it changes only by a deploy, and only by adding.
///
/// The value is canonical: roles and record types are kept sorted and unique (see
/// ``normalized()``), so two schemas that say the same thing are equal and print
/// to the same bytes (``SchemaPrinter``).
public struct Schema: Sendable, Hashable {
    /// Custom roles (`CREATE ROLE`), sorted by UTF-8 bytes, without the built-in ones.
    public var roles: [String]
    /// Record types, sorted by name (UTF-8 bytes).
    public var recordTypes: [RecordTypeSchema]

    /// A schema; the parts are normalized.
    public init(roles: [String] = [], recordTypes: [RecordTypeSchema] = []) {
        self.roles = roles
        self.recordTypes = recordTypes
        self = normalized()
    }

    /// The empty schema: no roles, no types (a new container's).
    public static let empty = Schema()

    /// The record type `name`, or `nil`.
    public func recordType(_ name: String) -> RecordTypeSchema? {
        recordTypes.first { $0.name == name }
    }

    /// Replaces (or adds) the record type of the same name, keeping the order.
    public mutating func setRecordType(_ type: RecordTypeSchema) {
        if let index = recordTypes.firstIndex(where: { $0.name == type.name }) {
            recordTypes[index] = type
        } else {
            recordTypes.append(type)
            recordTypes.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        }
    }

    /// Whether `role` is a built-in role or one this schema creates.
    public func knowsRole(_ role: String) -> Bool {
        SecurityRole.builtIn.contains(role) || roles.contains(role)
    }

    /// The same schema with roles and types sorted and unique, each type normalized.
    public func normalized() -> Schema {
        var copy = self
        copy.roles = UTF8Order.sortedUnique(roles)
        var byName: [String: RecordTypeSchema] = [:]
        for type in recordTypes { byName[type.name] = type.normalized() }
        copy.recordTypes = UTF8Order.sortedUnique(Array(byName.keys)).compactMap { byName[$0] }
        return copy
    }
}
