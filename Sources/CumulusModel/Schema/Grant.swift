/// `GRANT READ|CREATE|WRITE TO role` on a record type.
public struct Grant: Sendable, Hashable {
    /// The permissions a grant gives.
    public struct Permissions: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Read records of the type (public database).
        public static let read = Permissions(rawValue: 1)
        /// Create records of the type.
        public static let create = Permissions(rawValue: 2)
        /// Change and delete records of the type.
        public static let write = Permissions(rawValue: 4)
    }

    /// What the role may do.
    public var permissions: Permissions
    /// The role: built-in (``SecurityRole``) or created with `CREATE ROLE`.
    public var role: String

    /// A grant.
    public init(permissions: Permissions, role: String) {
        self.permissions = permissions
        self.role = role
    }
}

/// The built-in security roles.
public enum SecurityRole {
    /// Everyone, signed in or not.
    public static let world = "_world"
    /// Any signed-in user.
    public static let icloud = "_icloud"
    /// The record's creator.
    public static let creator = "_creator"
    /// The built-in role names.
    public static let builtIn: Set<String> = [world, icloud, creator]

    /// CloudKit's grants for a type that declares none: `_world` reads, `_icloud`
    /// creates, `_creator` writes.
    public static let defaultGrants: [Grant] = [
        Grant(permissions: .write, role: creator),
        Grant(permissions: .create, role: icloud),
        Grant(permissions: .read, role: world),
    ]
}
