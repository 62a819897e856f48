import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Turns an operator's schema change or role assignment into a commit (the door for
/// schemas, beside ``ModifyPlanner`` for records): runs on the writer thread inside
/// the group's transaction, so the change is checked against the schemas as they
/// stand after every earlier commit, and writes nothing itself. A change that leaves
/// everything as it was appends no commit.
struct SchemaPlanner {
    let views: Views
    let actor: String
    let requestID: String

    /// Plans replacing the schema of `id` with what `make` returns, given the
    /// transaction and the production schema (which it must keep readable); returns
    /// the schema then in force.
    func planReplacement(
        of id: SchemaID, reason: SchemaChangeReason, _ context: LogWriter.PlanContext,
        make: (LMDBReadTransaction, Schema) throws -> Schema
    ) throws -> (CommitRequest?, Schema) {
        let txn = context.transaction
        let production = try views.schema(SchemaID(container: id.container, environment: .production), in: txn).schema
        let current = try views.schema(id, in: txn).schema
        let new = try make(txn, production).normalized()
        guard new != current else { return (nil, current) }
        let event = Event.schemaChanged(schema: id, text: SchemaPrinter.print(new), reason: reason)
        return (CommitRequest(actor: actor, requestID: requestID, events: [event]), new)
    }

    /// Plans giving `user` exactly `roles` (sorted, unique, none built in) in `id`:
    /// refused if the schema does not create one of them.
    func planRoles(_ roles: [String], for user: String, in id: SchemaID, _ context: LogWriter.PlanContext) throws
        -> (CommitRequest?, Void)
    {
        let schema = try views.schema(id, in: context.transaction).schema
        if let unknown = roles.first(where: { !schema.roles.contains($0) }) {
            throw CumulusError(
                .invalidArguments, "role \(unknown) is not in the \(id) schema; add CREATE ROLE \(unknown) to it first")
        }
        guard try views.roles(of: user, in: id, context.transaction) != roles else { return (nil, ()) }
        let event = Event.rolesAssigned(schema: id, user: user, roles: roles)
        return (CommitRequest(actor: actor, requestID: requestID, events: [event]), ())
    }
}
