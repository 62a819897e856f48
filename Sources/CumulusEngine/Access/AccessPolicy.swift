import CumulusModel

/// Who may do what in which database (`Docs/SECURITY.md`, "Access rules"). Checks
/// that need a stored record (only a public record's creator may change it) are
/// made by the planner.
enum AccessPolicy {
    /// Throws unless `actor` (nil: no authentication) may read `database`.
    static func checkRead(_ database: DatabaseID, actor: String?) throws {
        switch database.scope {
        case .public:
            return
        case .private, .shared:
            guard let actor else {
                throw CumulusError(.notAuthenticated, "sign in to use the \(database.scope) database")
            }
            guard actor == database.owner else {
                throw CumulusError(.permissionFailure, "the \(database.scope) database belongs to another user")
            }
        }
    }

    /// Throws unless `actor` may write to `database` (records or zones).
    static func checkWrite(_ database: DatabaseID, actor: String?) throws -> String {
        guard let actor, !actor.isEmpty else {
            throw CumulusError(.notAuthenticated, "sign in to write; without authentication the public database is read-only")
        }
        try checkRead(database, actor: actor)
        return actor
    }
}
