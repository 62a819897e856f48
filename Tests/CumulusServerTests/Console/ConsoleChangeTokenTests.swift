import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import Testing

/// The console's change-token page through a live socket: an operator posts a client's
/// sync token and reads what it names; bad tokens are said to be bad; users and posts
/// without the CSRF token are refused.
@Suite("Web console: change tokens")
struct ConsoleChangeTokenTests {
    static func body(_ token: String) -> String { #"{"token":"\#(token)"}"# }

    @Test("an operator reads a zone's sync token; a damaged or non-base64 token is refused, and so are users and posts without the CSRF token")
    func inspect() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", ConsoleRecordsTests.createLists)
            let changes = try await world.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"}}]}"#)
            let token = try #require(changes.json["zones"]?[0]?["syncToken"]?.stringValue, "\(changes.json)")
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)

            let read = try await browser.send(.post, "/console/api/change-token", headers: alice.headers, body: Self.body(token))
            #expect(read.status == 200, "\(read.text)")
            #expect(read.json?["kind"]?.stringValue == "zone" && read.json?["zone"]?.stringValue?.hasPrefix("Lists") == true)
            #expect(read.json?["position"] == read.json?["feedHead"] && read.json?["refusal"] == nil)
            #expect(read.json?["sameLog"] == .bool(true) && read.json?["lastCoveredISO"] != nil)

            var bytes = Array(Data(base64Encoded: token) ?? Data())
            bytes[bytes.count / 2] ^= 1
            let damaged = try await browser.send(
                .post, "/console/api/change-token", headers: alice.headers, body: Self.body(Data(bytes).base64EncodedString()))
            #expect(damaged.json?["serverErrorCode"]?.stringValue == "CHANGE_TOKEN_EXPIRED", "\(damaged.text)")
            #expect(try await browser.send(.post, "/console/api/change-token", headers: alice.headers, body: Self.body("not base64!")).status == 400)
            #expect(try await browser.send(.post, "/console/api/change-token", headers: alice.headers, body: "[]").status == 400)

            var noCSRF = alice.headers
            noCSRF["X-Cumulus-CSRF"] = nil
            #expect(try await browser.send(.post, "/console/api/change-token", headers: noCSRF, body: Self.body(token)).status == 403)
            let bob = try await ConsoleRecordsTests.signIn(browser, world.bob)
            #expect(try await browser.send(.post, "/console/api/change-token", headers: bob.headers, body: Self.body(token)).status == 403)
        }
    }
}
