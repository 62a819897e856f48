import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// `users/discover` and `users/lookup/*` (issue 41, item 6; `Docs/HTTP-API.md`, "Routes") in
/// CloudKit's shapes, through a live server's socket. No user is discoverable in
/// Cumulus yet, so each answer is the same for a user who exists and one who does
/// not: who exists never leaks.
@Suite("User discovery")
struct UserDiscoveryTests {
    static func uri(_ operation: String, _ world: APIWorld, signedIn: Bool = true) -> String {
        LiveExchange.path(operation, database: "public") + "?ckAPIToken=\(world.apiToken)"
            + (signedIn ? "&ckWebAuthToken=\(world.aliceToken)" : "")
    }

    @Test("users/discover answers an empty users list, by GET and by POST, whoever is asked for")
    func discoverFindsNoOne() async throws {
        let world = try APIWorld()
        try await LiveExchange.live(world) { client in
            let all = try await LiveExchange.send(client, .get, Self.uri("users/discover", world))
            #expect(all.status == .ok, "\(String(describing: all.json))")
            #expect(all.json == ["users": []])
            let body = #"{"lookupInfos":[{"userRecordName":"\#(world.bob)"},{"userRecordName":"_0000000000000000000000000000dead"},{"emailAddress":"bob@example.com"}]}"#
            let asked = try await LiveExchange.send(client, .post, Self.uri("users/discover", world), body: body)
            #expect(asked.status == .ok, "\(String(describing: asked.json))")
            #expect(asked.json == ["users": []])
            let malformed = try await LiveExchange.send(client, .post, Self.uri("users/discover", world), body: #"{"lookupInfos":"bob"}"#)
            #expect(malformed.json?["serverErrorCode"] == "BAD_REQUEST", "\(String(describing: malformed.json))")
        }
    }

    @Test("users/lookup/email and users/lookup/id answer NOT_FOUND per user, in order, the same for a user who exists")
    func lookupsFindNoOne() async throws {
        let world = try APIWorld()
        try await LiveExchange.live(world) { client in
            let ids = [world.bob, "_0000000000000000000000000000dead"]
            let body = #"{"users":[\#(ids.map { #"{"userRecordName":"\#($0)"}"# }.joined(separator: ","))]}"#
            let byID = try await LiveExchange.send(client, .post, Self.uri("users/lookup/id", world), body: body)
            #expect(byID.status == .ok, "\(String(describing: byID.json))")
            let entries = try #require(byID.json?["users"]?.arrayValue)
            #expect(entries.map { $0["userRecordName"]?.stringValue } == ids)
            #expect(entries.allSatisfy { $0["serverErrorCode"] == "NOT_FOUND" }, "\(entries)")
            // An existing user's entry and a stranger's differ only in the name asked for.
            #expect(entries[0]["reason"] == entries[1]["reason"])
            #expect(entries[0].objectValue.map { Set($0.keys) } == entries[1].objectValue.map { Set($0.keys) })

            let byEmail = try await LiveExchange.send(
                client, .post, Self.uri("users/lookup/email", world), body: #"{"users":[{"emailAddress":"bob@example.com"}]}"#)
            #expect(byEmail.status == .ok, "\(String(describing: byEmail.json))")
            #expect(byEmail.json?["users"]?[0]?["emailAddress"] == "bob@example.com")
            #expect(byEmail.json?["users"]?[0]?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test("looking users up needs a signed-in user: 421 AUTHENTICATION_REQUIRED without one")
    func lookupsNeedSignIn() async throws {
        let world = try APIWorld()
        try await LiveExchange.live(world) { client in
            let answer = try await LiveExchange.send(client, .get, Self.uri("users/discover", world, signedIn: false))
            #expect(answer.status.code == 421, "\(String(describing: answer.json))")
            #expect(answer.json?["serverErrorCode"] == "AUTHENTICATION_REQUIRED")
        }
    }
}
