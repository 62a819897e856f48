import CumulusModel
@testable import CumulusServer
import Crypto
import Foundation
import HTTPTypes
import Testing

/// The console's credentials page through a live socket: tokens listed by IDs that sign
/// no one in; a token minted there works at once against the Web Services API and stops
/// working when revoked there; server-to-server keys registered and removed; bad actions,
/// users and posts without the CSRF token refused.
@Suite("Web console: credentials")
struct ConsoleCredentialsTests {
    static func post(_ browser: ConsoleTests.Browser, _ session: ConsoleRecordsTests.Session, _ body: String) async throws
        -> LiveExchange
    {
        try await browser.send(.post, "/console/api/credentials", headers: session.headers, body: body)
    }

    @Test("an API token and a web auth token minted in the console open the API until revoked there")
    func mintAndRevoke() async throws {
        try await ConsoleTests.live { world, browser in
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            let listed = try await browser.send(.get, "/console/api/credentials", headers: alice.headers)
            #expect(listed.status == 200, "\(listed.text)")
            let ids = (listed.json?["apiTokens"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            #expect(!ids.isEmpty && !ids.contains(world.apiToken), "IDs, not tokens")
            #expect(ids.contains(Hex.encode(AuthStore.digest(of: world.apiToken))))

            let minted = try await Self.post(
                browser, alice,
                #"{"action":"mint-api-token","container":"\#(APIWorld.containerName)","environment":"development","origins":["https://app.example.com"]}"#)
            let apiToken = try #require(minted.json?["made"]?["token"]?.stringValue, "\(minted.text)")
            let web = try await Self.post(
                browser, alice, #"{"action":"mint-web-auth-token","user":"\#(world.bob)","container":"\#(APIWorld.containerName)"}"#)
            let webToken = try #require(web.json?["made"]?["token"]?.stringValue, "\(web.text)")
            let asBob = try await world.post("users/current", "{}", token: webToken, apiToken: apiToken)
            #expect(asBob.status == 200 && asBob.json["userRecordName"]?.stringValue == world.bob, "\(asBob.json)")
            // Each listed by its SHA-256 (bob has another web auth token, the world's own).
            let apiID = Hex.encode(AuthStore.digest(of: apiToken))
            let webID = Hex.encode(AuthStore.digest(of: webToken))
            let entry = web.json?["apiTokens"]?.arrayValue?.first { $0["id"]?.stringValue == apiID }
            #expect(entry?["origins"]?[0]?.stringValue == "https://app.example.com")
            #expect(web.json?["webAuthTokens"]?.arrayValue?.first { $0["id"]?.stringValue == webID }?["user"]?.stringValue == world.bob)

            let revokedWeb = try await Self.post(browser, alice, #"{"action":"revoke-web-auth-token","id":"\#(webID)"}"#)
            #expect(revokedWeb.json?["made"]?["revoked"] == .bool(true))
            #expect(try await world.post("users/current", "{}", token: webToken, apiToken: apiToken).status == 401)
            let revokedAPI = try await Self.post(browser, alice, #"{"action":"revoke-api-token","id":"\#(apiID)"}"#)
            #expect(revokedAPI.json?["made"]?["revoked"] == .bool(true))
            #expect(try await world.post("zones/list", "{}", apiToken: apiToken).status == 401)
            let again = try await Self.post(browser, alice, #"{"action":"revoke-api-token","id":"\#(apiID)"}"#)
            #expect(again.json?["made"]?["revoked"] == .bool(false), "already gone")
            let malformed = try await Self.post(browser, alice, #"{"action":"revoke-api-token","id":"not hex"}"#)
            #expect(malformed.json?["made"]?["revoked"] == .bool(false))
        }
    }

    @Test("a server-to-server key registered in the console is listed and removed there; bad input, users and posts without the CSRF token are refused")
    func keysAndRefusals() async throws {
        try await ConsoleTests.live { world, browser in
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            let pem = P256.Signing.PrivateKey().publicKey.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let added = try await Self.post(
                browser, alice, #"{"action":"add-server-key","container":"\#(APIWorld.containerName)","pem":"\#(pem)"}"#)
            let keyID = try #require(added.json?["made"]?["keyID"]?.stringValue, "\(added.text)")
            #expect(added.json?["serverKeys"]?.arrayValue?.contains { $0["keyID"]?.stringValue == keyID } == true)
            #expect(try world.auth.serverKey(keyID) != nil)
            let removed = try await Self.post(browser, alice, #"{"action":"remove-server-key","keyID":"\#(keyID)"}"#)
            #expect(removed.json?["made"]?["revoked"] == .bool(true) && removed.json?["serverKeys"]?.arrayValue?.isEmpty == true)
            #expect(try world.auth.serverKey(keyID) == nil)

            let badPEM = try await Self.post(
                browser, alice, #"{"action":"add-server-key","container":"\#(APIWorld.containerName)","pem":"nonsense"}"#)
            #expect(badPEM.status == 400)
            #expect(try await Self.post(browser, alice, #"{"action":"mint-web-auth-token","user":"_nobody","container":"c"}"#).status == 400)
            #expect(try await Self.post(browser, alice, #"{"action":"steal"}"#).status == 400)
            #expect(try await Self.post(browser, alice, #"{"action":"mint-api-token","container":"c","environment":"staging"}"#).status == 400)
            var noCSRF = alice.headers
            noCSRF["X-Cumulus-CSRF"] = nil
            let unguarded = try await browser.send(
                .post, "/console/api/credentials", headers: noCSRF,
                body: #"{"action":"mint-api-token","container":"c","environment":"development"}"#)
            #expect(unguarded.status == 403)
            let bob = try await ConsoleRecordsTests.signIn(browser, world.bob)
            #expect(try await browser.send(.get, "/console/api/credentials", headers: bob.headers).status == 403)
        }
    }
}
