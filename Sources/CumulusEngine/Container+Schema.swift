import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Schemas (CloudKit's schema language, `Docs/SCHEMA.md`) and security roles: the
/// Swift API beside `cumulus schema` and `cumulus roles`.
///
/// Every change is a log event planned on the writer thread against the state it
/// changes, so a check (is this deploy additive?) and the change it allows cannot be
/// separated by another writer. Followers, rebuilds, replays and audit exports see
/// each change where it happened in the log.
extension Container {
    /// The schema of a container environment (empty if it has none).
    public func schema(_ id: SchemaID) throws -> Schema {
        let views = self.views
        return try store.environment.read { try views.schema(id, in: $0).schema }
    }

    /// The schema of a container environment in its canonical text.
    public func exportSchema(_ id: SchemaID) throws -> String {
        SchemaPrinter.print(try schema(id))
    }

    /// Replaces the schema of a container environment with `text`. Refused unless the
    /// new schema keeps every type and field of the production schema with its type
    /// (CloudKit's rule for both environments: production data must stay readable).
    /// Indexes it adds are built, and indexes it drops removed, in the same commit.
    /// Returns the schema now in force; importing what is already there logs nothing.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    @discardableResult
    public func importSchema(
        _ text: String, into id: SchemaID, as actor: String = "", requestID: String = UUID.random().uuidString
    ) async throws -> Schema {
        let schema = try SchemaParser.parse(text)
        return try await replaceSchema(id, reason: .imported, actor: actor, requestID: requestID) { _, production in
            try SchemaEvolution.checkAdditive(from: production, to: schema)
            return schema
        }
    }

    /// Copies the development schema of `container` to production. Refused, naming
    /// the type or field, when it would remove or retype anything production has.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    @discardableResult
    public func deploySchema(container: String, as actor: String = "", requestID: String = UUID.random().uuidString) async throws
        -> Schema
    {
        let id = SchemaID(container: container, environment: .production)
        let views = self.views
        return try await replaceSchema(id, reason: .deployed, actor: actor, requestID: requestID) { txn, production in
            let development = try views.schema(SchemaID(container: container, environment: .development), in: txn).schema
            try SchemaEvolution.checkAdditive(from: production, to: development)
            return development
        }
    }

    /// Sets the development schema of `container` back to production's (records stay;
    /// fields they hold that production lacks are added back just in time when saved).
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    @discardableResult
    public func resetSchema(container: String, as actor: String = "", requestID: String = UUID.random().uuidString) async throws
        -> Schema
    {
        try await replaceSchema(
            SchemaID(container: container, environment: .development), reason: .reset, actor: actor, requestID: requestID
        ) {
            _, production in production
        }
    }

    private func replaceSchema(
        _ id: SchemaID, reason: SchemaChangeReason, actor: String, requestID: String,
        _ make: @escaping @Sendable (LMDBReadTransaction, Schema) throws -> Schema
    ) async throws -> Schema {
        let planner = SchemaPlanner(views: views, actor: actor, requestID: requestID)
        let (_, schema) = try await writer.submit { context in
            try planner.planReplacement(of: id, reason: reason, context, make: make)
        }
        return schema
    }

    /// Gives `user` exactly `roles` (custom roles the schema creates; empty removes
    /// them all) in a container environment. Refuses a built-in role (everyone holds
    /// those as they apply) and a role the schema does not create.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    public func assignRoles(
        _ roles: [String], to user: String, in id: SchemaID, as actor: String = "", requestID: String = UUID.random().uuidString
    ) async throws {
        guard !user.isEmpty else { throw CumulusError(.invalidArguments, "name the user record to give roles to") }
        let wanted = UTF8Order.sortedUnique(roles)
        if let builtIn = wanted.first(where: { SecurityRole.builtIn.contains($0) }) {
            throw CumulusError(.invalidArguments, "\(builtIn) is a built-in role; every user holds it as it applies")
        }
        let planner = SchemaPlanner(views: views, actor: actor, requestID: requestID)
        _ = try await writer.submit { context in try planner.planRoles(wanted, for: user, in: id, context) }
    }

    /// The users holding custom roles in a container environment, with their roles.
    public func roleAssignments(in id: SchemaID) throws -> [(user: String, roles: [String])] {
        let views = self.views
        return try store.environment.read { try views.roleAssignments(in: id, $0) }
    }
}
