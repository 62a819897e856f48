import Foundation

/// The JSON of etcd's v3 gRPC gateway (`POST /v3/kv/range` and friends), every wire
/// key in this one file.
///
/// The gateway maps protobuf to JSON: bytes are base64, 64-bit integers are strings,
/// and fields at their default (`false`, `0`, an event's `PUT` type) are left out, so
/// every field here is optional and read through the helpers at the bottom.
enum EtcdGateway {
    // MARK: Requests

    static func range(_ key: [UInt8], end: [UInt8]? = nil) -> [String: Any] {
        var body: [String: Any] = ["key": base64(key)]
        if let end { body["range_end"] = base64(end) }
        return body
    }

    static func put(_ key: [UInt8], _ value: [UInt8], lease: Int64?) -> [String: Any] {
        var body: [String: Any] = ["key": base64(key), "value": base64(value)]
        if let lease { body["lease"] = String(lease) }
        return body
    }

    static func deleteRange(_ key: [UInt8]) -> [String: Any] { ["key": base64(key)] }

    static func leaseGrant(ttlSeconds: Int64) -> [String: Any] { ["TTL": String(ttlSeconds)] }

    static func lease(_ id: Int64) -> [String: Any] { ["ID": String(id)] }

    static func transaction(_ transaction: EtcdTransaction) -> [String: Any] {
        [
            "compare": transaction.compare.map(comparison),
            "success": transaction.success.map(operation),
            "failure": transaction.failure.map(operation),
        ]
    }

    static func watch(_ key: [UInt8], from revision: Int64) -> [String: Any] {
        var create: [String: Any] = ["key": base64(key), "progress_notify": true]
        if revision > 0 { create["start_revision"] = String(revision) }
        return ["create_request": create]
    }

    private static func comparison(_ comparison: EtcdTransaction.Comparison) -> [String: Any] {
        switch comparison {
        case .createRevision(let key, let revision):
            ["key": base64(Array(key.utf8)), "result": "EQUAL", "target": "CREATE", "create_revision": String(revision)]
        case .modRevision(let key, let revision):
            ["key": base64(Array(key.utf8)), "result": "EQUAL", "target": "MOD", "mod_revision": String(revision)]
        case .value(let key, let value):
            ["key": base64(Array(key.utf8)), "result": "EQUAL", "target": "VALUE", "value": base64(value)]
        }
    }

    private static func operation(_ operation: EtcdTransaction.Operation) -> [String: Any] {
        switch operation {
        case .put(let key, let value, let lease): ["request_put": put(Array(key.utf8), value, lease: lease)]
        case .get(let key): ["request_range": range(Array(key.utf8))]
        case .delete(let key): ["request_delete_range": deleteRange(Array(key.utf8))]
        }
    }

    static func authenticate(_ user: String, _ password: String) -> [String: Any] { ["name": user, "password": password] }

    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    // MARK: Responses

    struct Header: Decodable {
        var revision: String?
    }

    struct KeyValue: Decodable {
        var key: String?
        var value: String?
        var create_revision: String?
        var mod_revision: String?
        var version: String?
        var lease: String?

        func decoded() throws -> EtcdKeyValue {
            EtcdKeyValue(
                key: try bytes(key, "kv.key"), value: try bytes(value ?? "", "kv.value"),
                createRevision: try integer(create_revision, "kv.create_revision"),
                modRevision: try integer(mod_revision, "kv.mod_revision"), version: try integer(version, "kv.version"),
                lease: try integer(lease, "kv.lease"))
        }
    }

    struct RangeResponse: Decodable {
        var header: Header?
        var kvs: [KeyValue]?
    }

    struct LeaseResponse: Decodable {
        var ID: String?
        var TTL: String?
        var error: String?
    }

    /// A streaming call's message: `{"result": …}` or `{"error": …}`.
    struct Streamed<Result: Decodable>: Decodable {
        var result: Result?
        var error: Failure?
    }

    struct Failure: Decodable {
        var error: String?
        var message: String?
        var code: Int?

        var text: String { message ?? error ?? "code \(code ?? -1)" }

        /// gRPC's UNAUTHENTICATED (16): no token, or one etcd no longer takes.
        var isUnauthenticated: Bool { code == 16 }
    }

    struct AuthenticateResponse: Decodable {
        var token: String?
    }

    struct TransactionResponse: Decodable {
        var header: Header?
        var succeeded: Bool?
        var responses: [ResponseOperation]?
    }

    struct ResponseOperation: Decodable {
        var response_range: RangeResponse?
    }

    struct WatchResponse: Decodable {
        var header: Header?
        var created: Bool?
        var canceled: Bool?
        var compact_revision: String?
        var cancel_reason: String?
        var events: [Event]?
    }

    struct Event: Decodable {
        var type: String?
        var kv: KeyValue?

        func decoded() throws -> EtcdWatchEvent {
            guard let kv else { throw CoordinationError.protocolViolation("a watch event without its key") }
            switch type ?? "PUT" {
            case "PUT": return .put(try kv.decoded())
            case "DELETE": return .delete(key: try bytes(kv.key, "kv.key"), revision: try integer(kv.mod_revision, "kv.mod_revision"))
            case let other: throw CoordinationError.protocolViolation("a watch event of type \(other)")
            }
        }
    }

    // MARK: Field readers

    /// A 64-bit integer field: absent means 0 (protobuf's default).
    static func integer(_ text: String?, _ field: String) throws -> Int64 {
        guard let text else { return 0 }
        guard let value = Int64(text) else { throw CoordinationError.protocolViolation("\(field) is not an integer: \(text)") }
        return value
    }

    /// A bytes field: absent means empty.
    static func bytes(_ text: String?, _ field: String) throws -> [UInt8] {
        guard let text else { return [] }
        guard let data = Data(base64Encoded: text) else { throw CoordinationError.protocolViolation("\(field) is not base64") }
        return [UInt8](data)
    }
}
