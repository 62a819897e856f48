import Crypto
import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// Server-to-server signatures over the request target as received (issue 41, item
/// 1; `Docs/HTTP-API.md`, "Authentication"): CloudKit JS signs the path with its
/// raw query string, other
/// clients the path alone. Each request goes through a live server's socket, so the
/// query reaches the check exactly as a client sent it.
@Suite("Signatures over the request target")
struct SignedTargetTests {
    static let path = "/database/1/\(APIWorld.containerName)/development/public/records/modify"
    /// What CloudKit JS adds to every request, with percent-escapes left as sent: a
    /// check over the decoded query would not see these bytes.
    static let ckjsQuery = "ckjsBuildVersion=2420ProjectDev29&ckjsVersion=2.6.1&clientId=a1b2%2Bc3%2Fd4%3D"

    /// A world with a registered key; `body` runs against its live server.
    static func live(
        _ body: @escaping @Sendable (_ client: LiveClient, _ sign: Signer) async throws -> Void
    ) async throws {
        let world = try APIWorld()
        let key = P256.Signing.PrivateKey()
        let (keyID, _) = try world.auth.addServerKey(
            container: APIWorld.containerName, publicKeyPEM: key.publicKey.pemRepresentation)
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(client, Signer(key: key, keyID: keyID)) }
    }

    /// Signs requests as a client holding the key would.
    struct Signer: Sendable {
        let key: P256.Signing.PrivateKey
        let keyID: String

        /// The headers of a request whose body is `body`, signed over `target`.
        func headers(body: String, target: String) throws -> HTTPFields {
            let date = ISO8601DateFormatter().string(from: Date())
            let hash = Data(SHA256.hash(data: Array(body.utf8))).base64EncodedString()
            let signature = try key.signature(for: Data("\(date):\(hash):\(target)".utf8))
            var fields = HTTPFields()
            for (name, value) in [
                ("X-Apple-CloudKit-Request-KeyID", keyID), ("X-Apple-CloudKit-Request-ISO8601Date", date),
                ("X-Apple-CloudKit-Request-SignatureV1", signature.derRepresentation.base64EncodedString()),
            ] {
                if let field = HTTPField.Name(name) { fields[field] = value }
            }
            return fields
        }
    }

    static func create(_ name: String) -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Post"}}]}"#
    }

    /// Sends `body` to `uri` with `headers`: the status and the JSON answer.
    static func send(
        _ client: LiveClient, uri: String, headers: HTTPFields, body: String
    ) async throws -> (status: HTTPResponse.Status, json: JSONValue) {
        try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) { response in
            (response.status, try JSONValue.parse(Data(response.body.readableBytesView)))
        }
    }

    @Test("a request signed over its path and raw query verifies; the same signature with its query altered is refused")
    func queryIsSigned() async throws {
        try await Self.live { client, signer in
            let body = Self.create("ckjs")
            let headers = try signer.headers(body: body, target: Self.path + "?" + Self.ckjsQuery)
            let altered = Self.ckjsQuery.replacingOccurrences(of: "2.6.1", with: "2.6.2")
            let refused = try await Self.send(client, uri: Self.path + "?" + altered, headers: headers, body: body)
            #expect(refused.status == .unauthorized, "\(refused.json)")
            #expect(refused.json["serverErrorCode"] == "AUTHENTICATION_FAILED", "\(refused.json)")
            #expect(refused.json["reason"]?.stringValue?.contains("does not match") == true, "\(refused.json)")
            // The same signature over the query as signed: what was refused was the change.
            let accepted = try await Self.send(client, uri: Self.path + "?" + Self.ckjsQuery, headers: headers, body: body)
            #expect(accepted.status == .ok, "\(accepted.json)")
            #expect(accepted.json["records"]?[0]?["recordName"] == "ckjs", "\(accepted.json)")
        }
    }

    @Test("a request signed over its path and query is accepted once: the same request again is refused")
    func signedQueryCannotBeReplayed() async throws {
        try await Self.live { client, signer in
            let body = Self.create("once")
            let uri = Self.path + "?" + Self.ckjsQuery
            let headers = try signer.headers(body: body, target: uri)
            #expect(try await Self.send(client, uri: uri, headers: headers, body: body).status == .ok)
            let replay = try await Self.send(client, uri: uri, headers: headers, body: body)
            #expect(replay.status == .unauthorized, "\(replay.json)")
            #expect(replay.json["reason"]?.stringValue?.contains("already received") == true, "\(replay.json)")
        }
    }

    @Test("a request signed over its path alone verifies, with no query and with one (Sputnik and MistKit style)")
    func pathAloneStillVerifies() async throws {
        try await Self.live { client, signer in
            let bare = Self.create("bare")
            let plain = try await Self.send(
                client, uri: Self.path, headers: try signer.headers(body: bare, target: Self.path), body: bare)
            #expect(plain.status == .ok, "\(plain.json)")
            let queried = Self.create("queried")
            let withQuery = try await Self.send(
                client, uri: Self.path + "?numbersAsStrings=false", headers: try signer.headers(body: queried, target: Self.path),
                body: queried)
            #expect(withQuery.status == .ok, "\(withQuery.json)")
            #expect(withQuery.json["records"]?[0]?["recordName"] == "queried", "\(withQuery.json)")
        }
    }
}
