/// Which database an operation addresses: a container's environment, a scope and,
/// for private and shared databases, the user they belong to (`Docs/DATA-MODEL.md`, "Databases").
public struct DatabaseID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// A container's environment; development and production hold separate data.
    public enum Environment: UInt8, Sendable, Hashable, CaseIterable, Codable {
        /// Schema may change implicitly.
        case development = 1
        /// Deployed schema only.
        case production = 2

        /// `development` or `production`, as in URLs.
        public var name: String { self == .development ? "development" : "production" }

        /// Parses the URL name.
        public init?(name: String) {
            switch name {
            case "development": self = .development
            case "production": self = .production
            default: return nil
            }
        }
    }

    /// The container identifier, e.g. `iCloud.com.example.todo`.
    public var container: String
    /// The container's environment.
    public var environment: Environment
    /// Public, private or shared.
    public var scope: DatabaseScope
    /// The user a private or shared database belongs to; empty for the public database.
    public var owner: String

    /// A database ID. The public database has no owner, so `owner` is ignored for it.
    public init(container: String, environment: Environment = .development, scope: DatabaseScope, owner: String = "") {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.owner = scope == .public ? "" : owner
    }

    /// Orders by container, environment, scope, owner.
    public static func < (lhs: DatabaseID, rhs: DatabaseID) -> Bool {
        (lhs.container, lhs.environment.rawValue, lhs.scope.rawValue, lhs.owner)
            < (rhs.container, rhs.environment.rawValue, rhs.scope.rawValue, rhs.owner)
    }

    /// `container/environment/scope[/owner]`.
    public var description: String {
        let base = "\(container)/\(environment.name)/\(scope)"
        return owner.isEmpty ? base : base + "/" + owner
    }
}
