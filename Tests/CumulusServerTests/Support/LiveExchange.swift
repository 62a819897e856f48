import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging

/// One request to a live server over its socket, with the headers a browser or
/// CloudKit JS would send, and what came back.
struct LiveExchange {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    /// How many bytes the body held.
    let bodyCount: Int
    /// The body as JSON; `nil` when it is empty or not JSON.
    let json: JSONValue?
    /// The body as text (a page, a script).
    let text: String

    /// `name=value` of the cookie the answer sets, if it sets one.
    var cookie: String? { header("Set-Cookie")?.split(separator: ";").first.map(String.init) }

    /// The answer header `name`, if present.
    func header(_ name: String) -> String? {
        HTTPField.Name(name).flatMap { headers[$0] }
    }

    /// Whether any `Access-Control-*` header came back.
    var hasCrossOriginHeaders: Bool {
        headers.contains { $0.name.canonicalName.hasPrefix("access-control-") }
    }

    /// Sends `method` `uri` with `headers` (name → value) and `body`.
    static func send(
        _ client: LiveClient, _ method: HTTPRequest.Method, _ uri: String, headers: [String: String] = [:],
        body: String? = nil
    ) async throws -> LiveExchange {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        return try await client.execute(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(string: $0) }) {
            response in
            let bytes = Data(response.body.readableBytesView)
            return LiveExchange(
                status: response.status, headers: response.headers, bodyCount: bytes.count,
                json: bytes.isEmpty ? nil : try? JSONValue.parse(bytes), text: String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A live server over `world`'s API; `body` talks to it.
    static func live(
        _ world: APIWorld, _ body: @escaping @Sendable (LiveClient) async throws -> Void
    ) async throws {
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(client) }
    }

    /// The path of `operation` in `database` of the world's container, in development.
    static func path(_ operation: String, database: String = "private") -> String {
        "/database/1/\(APIWorld.containerName)/development/\(database)/\(operation)"
    }
}
