import CumulusModel
import Foundation

/// The console's schema page (operators): a container's schema in both environments in
/// CloudKit's schema language (`Docs/SCHEMA.md`), who holds which security role, and the
/// changes `cumulus schema` makes: import into development, deploy to production, reset
/// development to production's. Each change is a commit of the operator's, under the
/// request's ID, planned as the CLI's is; a refusal names its line and column (import) or
/// what it would take away (deploy).
extension CloudKitAPI {
    /// `GET /console/api/schema/text?container=`: both environments' schemas in their
    /// canonical text, and each environment's role holders.
    func consoleSchemaText(of name: String) throws -> JSONValue {
        var answer: [String: JSONValue] = ["container": .string(name)]
        for environment in DatabaseID.Environment.allCases {
            let id = SchemaID(container: name, environment: environment)
            answer[environment.name] = [
                "text": .string(try container.exportSchema(id)),
                "roles": .array(try container.schema(id).roles.map { .string($0) }),
                "holders": .array(try container.roleAssignments(in: id).map { holder in
                    ["user": .string(holder.user), "roles": .array(holder.roles.map { .string($0) })]
                }),
            ]
        }
        return .object(answer)
    }

    /// `POST /console/api/schema/{import,deploy,reset}` with `{"container", "text"?}`: the
    /// change, as the operator; answers with the schemas as they now are.
    func consoleSchemaChange(_ request: APIRequest, _ route: Route, operator user: String, requestID: String)
        async throws -> JSONValue
    {
        guard case .object(let body)? = try? JSONValue.parse(Data(request.body)),
            case .string(let name)? = body["container"], !name.isEmpty
        else {
            throw ConsoleRefusal(code: .badRequest, reason: "send {\"container\": …} (and \"text\" to import)")
        }
        switch route {
        case .consoleSchemaImport:
            guard case .string(let text)? = body["text"] else {
                throw ConsoleRefusal(code: .badRequest, reason: "send the schema to import as \"text\"")
            }
            try await container.importSchema(
                text, into: SchemaID(container: name, environment: .development), as: user, requestID: requestID)
        case .consoleSchemaDeploy:
            try await container.deploySchema(container: name, as: user, requestID: requestID)
        default:
            try await container.resetSchema(container: name, as: user, requestID: requestID)
        }
        return try consoleSchemaText(of: name)
    }
}
