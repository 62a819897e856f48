import CumulusModel
import Foundation

/// An HTTP request as the API sees it, independent of the HTTP server carrying it.
public struct APIRequest: Sendable {
    /// `GET`, `POST`, …
    public var method: String
    /// The path, e.g. `/database/1/iCloud.x/development/private/records/modify`.
    public var path: String {
        didSet { knownMatch = nil }
    }
    /// Query parameters, percent-decoded.
    public var query: [String: String]
    /// The query string exactly as received, undecoded and without its `?`; `nil` when
    /// the target has none. Server-to-server signatures may cover it byte for byte
    /// (``ServerSignature``), which the decoded ``query`` cannot reproduce.
    public var rawQuery: String?
    /// Header fields, names lower-cased.
    public var headers: [String: String]
    /// The body bytes.
    public var body: [UInt8]
    /// The client's IP address, as the server's socket sees it (behind a proxy, the
    /// proxy's); `nil` when called in process. What the per-address rate limit counts.
    public var clientAddress: String?
    /// Whether it came over this server's own TLS (`serve --tls-cert`): the URLs handed
    /// back are then https, as they are behind a proxy that says `X-Forwarded-Proto: https`.
    public var overTLS = false
    /// The path read against the route table by whoever already did (the HTTP layer,
    /// to choose how to answer), so the API need not read it again: each reading
    /// splits the path and builds its segments (perf: a few per cent of a small read).
    /// Forgotten when `path` changes.
    private var knownMatch: Route.Match?

    /// The path read against the route table (``Route/match(_:)``), once per request
    /// where the reader keeps it (``matching(_:)``).
    public var matched: Route.Match { knownMatch ?? Route.match(path) }

    /// This request with `match`, which must be `Route.match(path)`, kept for ``matched``.
    public func matching(_ match: Route.Match) -> APIRequest {
        var copy = self
        copy.knownMatch = match
        return copy
    }

    /// A request.
    public init(
        method: String, path: String, query: [String: String] = [:], rawQuery: String? = nil,
        headers: [String: String] = [:], body: [UInt8] = [], clientAddress: String? = nil
    ) {
        self.clientAddress = clientAddress
        self.rawQuery = rawQuery
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The body as a JSON document (`{}` when empty), read in place; values built
    /// from it keep to the memory the server reserved for them
    /// (``JSONValue/memoryLimit(forBodyBytes:)``). Malformed is `invalidArguments`, a
    /// body whose values would take too much `limitExceeded` when they are built.
    func parsedBody() throws -> JSONDocument.Node {
        let text = body.isEmpty ? Self.emptyObject : body
        return try JSONDocument(parsing: text, memoryLimit: JSONValue.memoryLimit(forBodyBytes: text.count)).root
    }

    private static let emptyObject = Array("{}".utf8)
}

/// An HTTP response: a status and a JSON body (errors included: clients read only JSON).
public struct APIResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The JSON body.
    public var json: JSONValue
    /// A plain-text body instead of JSON (`/metrics`, the sign-in page).
    public var text: String?
    /// The body's media type when it is `text` (default: Prometheus's text format).
    public var contentType: String?
    /// Extra header fields (`X-Cumulus-Sequence`).
    public var headers: [String: String] = [:]
    /// The JSON body written already, from stored records (``RecordJSONWriter``),
    /// instead of `json`: answers that carry records, which are never error bodies.
    public var written: [UInt8]?

    /// A response.
    public init(status: Int = 200, json: JSONValue) {
        self.status = status
        self.json = json
    }

    /// A `200` whose JSON body is written already.
    init(written: [UInt8]) {
        self.status = 200
        self.json = .null
        self.written = written
    }

    /// A request-level error: `{uuid, serverErrorCode, reason}` with CloudKit's status.
    /// `retryAfter` (seconds) goes in the body, where CloudKit says when to retry, not
    /// in a header.
    static func error(
        _ code: ServerErrorCode, _ reason: String, redirectURL: String? = nil, retryAfter: Int? = nil
    ) -> APIResponse {
        var body: [String: JSONValue] = [
            "uuid": .string(UUID.random().uuidString), "serverErrorCode": .string(code.name), "reason": .string(reason),
        ]
        if let redirectURL { body["redirectURL"] = .string(redirectURL) }
        if let retryAfter { body["retryAfter"] = .int(Int64(retryAfter)) }
        return APIResponse(status: code.status, json: .object(body))
    }

    /// Whether the answer has a body: all but `204 No Content` (an allowed CORS preflight).
    public var hasBody: Bool { status != 204 }

    /// The body: none for a `204`, the text if there is one, else UTF-8 JSON.
    public func bodyBytes() -> [UInt8] {
        guard hasBody else { return [] }
        if let text { return Array(text.utf8) }
        if let written { return written }
        var writer = JSONWriter(capacity: 256)
        writer.value(json)
        return writer.bytes
    }
}

/// A per-item error dictionary inside a 200 answer (`Docs/HTTP-API.md`, "Errors").
func itemError(_ error: CumulusError, name: String? = nil, creating: Bool = false) -> JSONValue {
    var dict: [String: JSONValue] = [
        "serverErrorCode": .string(ServerErrorCode(error, creating: creating).name),
        "reason": .string(error.message),
        "uuid": .string(UUID.random().uuidString),
    ]
    if let name = name ?? error.recordID?.recordName { dict["recordName"] = .string(name) }
    // The server record comes from the planner's checked read; were it damaged, the
    // error goes out without it rather than failing the whole answer.
    if let server = error.serverRecord, let json = try? RecordJSON.encode(server) { dict["serverRecord"] = json }
    return .object(dict)
}
