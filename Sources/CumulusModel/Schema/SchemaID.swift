/// Which schema: CloudKit keeps one per container and environment, shared by the
/// container's public, private and shared databases.
public struct SchemaID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The container identifier, e.g. `iCloud.com.example.todo`.
    public var container: String
    /// Development or production.
    public var environment: DatabaseID.Environment

    /// A schema ID.
    public init(container: String, environment: DatabaseID.Environment) {
        self.container = container
        self.environment = environment
    }

    /// The schema of the database `database` belongs to.
    public init(_ database: DatabaseID) {
        self.init(container: database.container, environment: database.environment)
    }

    /// Orders by container, then environment.
    public static func < (lhs: SchemaID, rhs: SchemaID) -> Bool {
        (lhs.container, lhs.environment.rawValue) < (rhs.container, rhs.environment.rawValue)
    }

    /// `container/environment`.
    public var description: String { "\(container)/\(environment.name)" }
}

/// Why a schema was replaced whole (the `schemaChanged` event).
public enum SchemaChangeReason: UInt8, Sendable, Hashable, CaseIterable {
    /// `cumulus schema import`: a schema file was loaded.
    case imported = 1
    /// `cumulus schema deploy`: development was copied to production.
    case deployed = 2
    /// `cumulus schema reset`: development was set back to production's.
    case reset = 3

    /// The word the tools print.
    public var name: String {
        switch self {
        case .imported: "import"
        case .deployed: "deploy"
        case .reset: "reset"
        }
    }
}
