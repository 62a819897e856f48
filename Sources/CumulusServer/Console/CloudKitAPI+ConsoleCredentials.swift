import CumulusModel
import Foundation

/// The console's token page (operators): API tokens (the container and environment each
/// opens, the web origins allowed to use it), web auth tokens (whom they sign in, where,
/// until when) and server-to-server keys, listed by IDs that name them without being them;
/// minting (the new token is in that one answer, never again) and revoking, as `cumulus
/// tokens` and `cumulus keys` do.
extension CloudKitAPI {
    /// `GET /console/api/credentials`: every credential; `POST` with `{"action", …}` mints
    /// or revokes one and answers with what it made, beside the list as it now is.
    func consoleCredentials(_ request: APIRequest) throws -> JSONValue {
        var made: [String: JSONValue] = [:]
        if request.method == "POST" {
            guard case .object(let body)? = try? JSONValue.parse(Data(request.body)), case .string(let action)? = body["action"] else {
                throw ConsoleRefusal(code: .badRequest, reason: "send {\"action\": …}")
            }
            func text(_ name: String) throws -> String {
                guard case .string(let value)? = body[name], !value.isEmpty else {
                    throw ConsoleRefusal(code: .badRequest, reason: "\(action) needs \(name)")
                }
                return value
            }
            switch action {
            case "mint-api-token":
                let origins = (body["origins"]?.arrayValue ?? []).compactMap(\.stringValue).filter { !$0.isEmpty }
                made["token"] = .string(try auth.createAPIToken(
                    container: try text("container"), environment: try Self.environment(named: try text("environment")),
                    origins: origins))
            case "mint-web-auth-token":
                made["token"] = .string(try auth.createWebAuthToken(for: try text("user"), container: try text("container")))
            case "add-server-key":
                let (keyID, user) = try auth.addServerKey(container: try text("container"), publicKeyPEM: try text("pem"))
                made["keyID"] = .string(keyID)
                made["user"] = .string(user)
            case "revoke-api-token":
                made["revoked"] = .bool(try auth.revokeAPIToken(id: try text("id")))
            case "revoke-web-auth-token":
                made["revoked"] = .bool(try auth.revokeWebAuthToken(id: try text("id")))
            case "remove-server-key":
                made["revoked"] = .bool(try auth.removeServerKey(try text("keyID")))
            default:
                throw ConsoleRefusal(
                    code: .badRequest,
                    reason: "no action \(action): mint-api-token, mint-web-auth-token, add-server-key, revoke-api-token, revoke-web-auth-token, remove-server-key")
            }
        }
        var answer: [String: JSONValue] = [
            "apiTokens": .array(try auth.apiTokens().map { token in
                [
                    "id": .string(token.id), "container": .string(token.scope.container),
                    "environment": .string(token.scope.environment?.name ?? "both (minted before tokens were bound)"),
                    "origins": .array(token.scope.origins.map { .string($0) }),
                ]
            }),
            "webAuthTokens": .array(try auth.webAuthTokens().map { token in
                var entry: [String: JSONValue] = [
                    "id": .string(token.id), "container": .string(token.container), "user": .string(token.user),
                ]
                if let expires = token.expires { entry["expires"] = .int(expires.millisecondsSince1970) }
                return .object(entry)
            }),
            "serverKeys": .array(try auth.serverKeys().map { key in
                ["keyID": .string(key.keyID), "container": .string(key.container), "user": .string(key.user)]
            }),
            "users": .array(try auth.users().map { .string($0) }),
        ]
        if !made.isEmpty { answer["made"] = .object(made) }
        return .object(answer)
    }
}
