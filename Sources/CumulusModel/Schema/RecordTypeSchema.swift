/// One `RECORD TYPE` of a schema: its fields and its grants.
public struct RecordTypeSchema: Sendable, Hashable {
    /// The type name (an identifier; `Users` is the system's user type).
    public var name: String
    /// Declared fields: system fields (`___…`) first in ``SystemField`` order, then
    /// user fields sorted by name (UTF-8 bytes); names unique.
    public var fields: [FieldSchema]
    /// Grants, one per role, sorted by role name; a type with none gets CloudKit's
    /// defaults (``SecurityRole/defaultGrants``).
    public var grants: [Grant]

    /// A record type; the parts are normalized.
    public init(name: String, fields: [FieldSchema] = [], grants: [Grant] = []) {
        self.name = name
        self.fields = fields
        self.grants = grants
        self = normalized()
    }

    /// The declared field `name` (user or system), or `nil`.
    public func field(_ name: String) -> FieldSchema? {
        fields.first { $0.name == name }
    }

    /// The grants in force: the declared ones, or CloudKit's defaults when none are declared.
    public var effectiveGrants: [Grant] { grants.isEmpty ? SecurityRole.defaultGrants : grants }

    /// Whether `role` holds `permission` on this type.
    public func grants(_ permission: Grant.Permissions, to role: String) -> Bool {
        effectiveGrants.contains { $0.role == role && $0.permissions.contains(permission) }
    }

    /// The same type with fields ordered (system first, then by name) and unique
    /// (the last declaration of a name wins), and grants merged per role.
    public func normalized() -> RecordTypeSchema {
        var copy = self
        var byName: [String: FieldSchema] = [:]
        for field in fields { byName[field.name] = field }
        let system = SystemField.allCases.compactMap { byName[$0.rawValue] }
        let user = UTF8Order.sortedUnique(byName.keys.filter { SystemField(rawValue: $0) == nil }).compactMap { byName[$0] }
        copy.fields = system + user
        var permissions: [String: Grant.Permissions] = [:]
        for grant in grants { permissions[grant.role, default: []].formUnion(grant.permissions) }
        copy.grants = UTF8Order.sortedUnique(Array(permissions.keys)).compactMap { role in
            permissions[role].flatMap { $0.isEmpty ? nil : Grant(permissions: $0, role: role) }
        }
        return copy
    }
}
