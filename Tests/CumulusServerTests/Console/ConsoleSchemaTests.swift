import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import Testing

/// The console's schema page through a live socket: both environments' schemas and role
/// holders for operators; import (a refusal naming its line), deploy and reset as
/// `cumulus schema` makes them, each a commit of the operator's; users and writes without
/// the CSRF token refused.
@Suite("Web console: schema")
struct ConsoleSchemaTests {
    static let container = APIWorld.containerName

    static func body(_ text: String? = nil) -> String {
        var body: [String: String] = ["container": container]
        if let text { body["text"] = text }
        return String(decoding: try! JSONEncoder().encode(body), as: UTF8.self)
    }

    static let places = """
        DEFINE SCHEMA
            RECORD TYPE Place (
                "___recordID" REFERENCE QUERYABLE,
                title STRING QUERYABLE SEARCHABLE,
                GRANT READ TO "_world",
                GRANT WRITE, CREATE TO "_icloud"
            );
        """

    @Test("an operator reads both environments, imports into development, deploys, and resets; each change is theirs in the log")
    func importDeployReset() async throws {
        try await ConsoleTests.live { world, browser in
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            let before = try await browser.send(.get, "/console/api/schema/text?container=\(Self.container)", headers: alice.headers)
            #expect(before.status == 200, "\(before.text)")
            #expect(before.json?["production"]?["text"]?.stringValue?.contains("Place") == false)

            let imported = try await browser.send(.post, "/console/api/schema/import", headers: alice.headers, body: Self.body(Self.places))
            #expect(imported.status == 200, "\(imported.text)")
            #expect(imported.json?["development"]?["text"]?.stringValue?.contains("RECORD TYPE Place") == true)
            #expect(imported.json?["production"]?["text"]?.stringValue?.contains("Place") == false)
            let commit = try #require(try world.container.store.read(world.container.store.head.sequence))
            #expect(commit.actor == world.alice, "the operator's commit")

            let deployed = try await browser.send(.post, "/console/api/schema/deploy", headers: alice.headers, body: Self.body())
            #expect(deployed.status == 200 && deployed.json?["production"]?["text"]?.stringValue?.contains("RECORD TYPE Place") == true)

            // Development grows a type; a reset takes it back to production's.
            let grown = Self.places.replacingOccurrences(
                of: "DEFINE SCHEMA\n", with: "DEFINE SCHEMA\n    RECORD TYPE Note (text STRING);\n")
            let more = try await browser.send(.post, "/console/api/schema/import", headers: alice.headers, body: Self.body(grown))
            #expect(more.json?["development"]?["text"]?.stringValue?.contains("Note") == true, "\(more.text)")
            let reset = try await browser.send(.post, "/console/api/schema/reset", headers: alice.headers, body: Self.body())
            #expect(reset.status == 200)
            #expect(reset.json?["development"]?["text"] == reset.json?["production"]?["text"])
        }
    }

    @Test("a refusal names its line and column; an import may not drop what production has; users and writes without the CSRF token are refused")
    func refusals() async throws {
        try await ConsoleTests.live { world, browser in
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            let broken = "DEFINE SCHEMA\n    RECORD TYPE Place (\n        title STRNG\n    );\n"
            let refused = try await browser.send(.post, "/console/api/schema/import", headers: alice.headers, body: Self.body(broken))
            #expect(refused.status == 400 && refused.json?["reason"]?.stringValue?.hasPrefix("line 3, column ") == true, "\(refused.text)")

            _ = try await browser.send(.post, "/console/api/schema/import", headers: alice.headers, body: Self.body(Self.places))
            _ = try await browser.send(.post, "/console/api/schema/deploy", headers: alice.headers, body: Self.body())
            let dropping = try await browser.send(
                .post, "/console/api/schema/import", headers: alice.headers, body: Self.body("DEFINE SCHEMA\n"))
            #expect(dropping.status == 400 && dropping.text.contains("Place"), "\(dropping.text)")

            var noCSRF = alice.headers
            noCSRF["X-Cumulus-CSRF"] = nil
            #expect(try await browser.send(.post, "/console/api/schema/reset", headers: noCSRF, body: Self.body()).status == 403)
            let bob = try await ConsoleRecordsTests.signIn(browser, world.bob)
            #expect(try await browser.send(.get, "/console/api/schema/text?container=\(Self.container)", headers: bob.headers).status == 403)
            #expect(try await browser.send(.post, "/console/api/schema/deploy", headers: bob.headers, body: Self.body()).status == 403)
            #expect(try await browser.send(.post, "/console/api/schema/deploy", headers: alice.headers, body: "{}").status == 400)
        }
    }
}
