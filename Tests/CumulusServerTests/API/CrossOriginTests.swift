import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// CORS for the origins an API token allows (issue 41, item 6), through a live
/// server's socket with the headers a browser sends: an allowed origin is answered
/// with its own name, any other with no CORS header at all, and a token minted
/// without origins (as every token before this change) allows none.
@Suite("Cross-origin requests from browser apps")
struct CrossOriginTests {
    static let app = "https://app.example.com"
    static let local = "http://localhost:8080"
    static let other = "https://evil.example.net"

    /// A world whose extra token allows ``app`` (minted as an operator might type it)
    /// and ``local``; `body` gets that token and a live server.
    static func live(
        _ body: @escaping @Sendable (_ world: APIWorld, _ token: String, _ client: LiveClient) async throws -> Void
    ) async throws {
        let world = try APIWorld()
        let token = try world.auth.createAPIToken(
            container: APIWorld.containerName, environment: .development, origins: ["HTTPS://App.Example.com:443/", local])
        try await LiveExchange.live(world) { client in try await body(world, token, client) }
    }

    static func caller(_ token: String, signedIn world: APIWorld?) -> String {
        LiveExchange.path("users/caller", database: "public") + "?ckAPIToken=\(token)"
            + (world.map { "&ckWebAuthToken=\($0.aliceToken)" } ?? "")
    }

    @Test("a request from an allowed origin gets Access-Control-Allow-Origin naming it and Vary: Origin, errors included")
    func allowedOriginIsNamed() async throws {
        try await Self.live { world, token, client in
            for origin in [Self.app, Self.local] {
                let answer = try await LiveExchange.send(client, .get, Self.caller(token, signedIn: world), headers: ["Origin": origin])
                #expect(answer.status == .ok, "\(String(describing: answer.json))")
                #expect(answer.header("Access-Control-Allow-Origin") == origin)
                #expect(answer.header("Vary")?.contains("Origin") == true)
                #expect(answer.header("Access-Control-Allow-Credentials") == nil)
            }
            // CloudKit JS must read the 421 to start signing its user in.
            let signIn = try await LiveExchange.send(client, .get, Self.caller(token, signedIn: nil), headers: ["Origin": Self.app])
            #expect(signIn.status.code == 421, "\(String(describing: signIn.json))")
            #expect(signIn.header("Access-Control-Allow-Origin") == Self.app)
        }
    }

    @Test("a request from another origin, or with a token minted without origins, gets no CORS header")
    func otherOriginsGetNothing() async throws {
        try await Self.live { world, token, client in
            let refused = try await LiveExchange.send(client, .get, Self.caller(token, signedIn: world), headers: ["Origin": Self.other])
            // The server still answers (only the browser withholds it from the page).
            #expect(refused.status == .ok)
            #expect(!refused.hasCrossOriginHeaders, "\(refused.headers)")
            // A near miss is another origin: the scheme and the port are part of it.
            for near in ["http://app.example.com", "https://app.example.com:8443", "http://localhost:8081", "null", "*"] {
                let answer = try await LiveExchange.send(client, .get, Self.caller(token, signedIn: world), headers: ["Origin": near])
                #expect(!answer.hasCrossOriginHeaders, "\(near): \(answer.headers)")
            }
            let unlisted = try await LiveExchange.send(
                client, .get, Self.caller(world.apiToken, signedIn: world), headers: ["Origin": Self.app])
            #expect(unlisted.status == .ok)
            #expect(!unlisted.hasCrossOriginHeaders, "\(unlisted.headers)")
        }
    }

    @Test("a preflight from an allowed origin is 204 with the methods, headers and max-age; from another origin it is 403")
    func preflights() async throws {
        try await Self.live { world, token, client in
            let uri = LiveExchange.path("records/modify") + "?ckAPIToken=\(token)&ckWebAuthToken=\(world.aliceToken)"
            let asking = ["Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"]
            let allowed = try await LiveExchange.send(client, .options, uri, headers: asking.merging(["Origin": Self.app]) { $1 })
            #expect(allowed.status == .noContent)
            #expect(allowed.header("Access-Control-Allow-Origin") == Self.app)
            #expect(allowed.header("Vary")?.contains("Origin") == true)
            let methods = allowed.header("Access-Control-Allow-Methods") ?? ""
            #expect(methods.contains("GET") && methods.contains("POST"), "\(methods)")
            let headers = allowed.header("Access-Control-Allow-Headers")?.lowercased() ?? ""
            for name in ["content-type"] + ServerSignature.headerNames.map({ $0.lowercased() }) {
                #expect(headers.contains(name), "\(name) in \(headers)")
            }
            #expect(allowed.header("Access-Control-Max-Age") == String(CrossOrigin.maxAgeSeconds))
            #expect(allowed.bodyCount == 0)

            for (origin, apiToken) in [(Self.other, token), (Self.app, world.apiToken), (Self.app, "f00d")] {
                let uri = LiveExchange.path("records/modify") + "?ckAPIToken=\(apiToken)"
                let refused = try await LiveExchange.send(client, .options, uri, headers: asking.merging(["Origin": origin]) { $1 })
                #expect(refused.status == .forbidden, "\(origin)")
                #expect(refused.json?["serverErrorCode"] == "ACCESS_DENIED", "\(String(describing: refused.json))")
                #expect(!refused.hasCrossOriginHeaders, "\(refused.headers)")
            }
        }
    }

    @Test("revoking a token ends what it allowed")
    func revokedTokenAllowsNothing() async throws {
        try await Self.live { world, token, client in
            #expect(try world.auth.revokeAPIToken(token))
            let answer = try await LiveExchange.send(client, .get, Self.caller(token, signedIn: world), headers: ["Origin": Self.app])
            #expect(answer.status == .unauthorized)
            #expect(!answer.hasCrossOriginHeaders, "\(answer.headers)")
        }
    }

    @Test("an origin is stored as a browser sends it; anything that is not one origin is refused at minting")
    func originsAreNormalized() throws {
        #expect(try CrossOrigin.normalizedOrigin("HTTPS://App.Example.com:443/") == "https://app.example.com")
        #expect(try CrossOrigin.normalizedOrigin("http://localhost:8080") == "http://localhost:8080")
        #expect(try CrossOrigin.normalizedOrigin("http://[::1]:80") == "http://[::1]")
        for bad in ["*", "null", "app.example.com", "ftp://x.example", "https://x.example/app", "https://u@x.example",
                    "https://x.example?q", "https://x.example:0", "https://x.example:99999", "https://", "https://a:b:1"] {
            #expect(throws: CumulusError.self, "\(bad)") { try CrossOrigin.normalizedOrigin(bad) }
        }
        let world = try APIWorld()
        #expect(throws: CumulusError.self) {
            try world.auth.createAPIToken(container: APIWorld.containerName, environment: .development, origins: ["*"])
        }
    }
}
