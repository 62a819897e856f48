import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import Testing

/// The rules around shares (`Docs/HTTP-API.md`, "Sharing"), through the API handler: what
/// is refused and with which code, leaving and deleting shares, the public
/// permission, subscriptions in the shared database, and views rebuilt from the log.
@Suite("Sharing rules")
struct SharingRulesTests {
    typealias Script = SharingRoutesTests

    /// A world where alice has zone `Z` holding p1 ← t1 (parent), and o1.
    static func world() async throws -> APIWorld {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#)
        let seeded = try await world.post("records/modify", Script.records("Z", [("p1", "Project", nil), ("t1", "Task", "p1"), ("o1", "Task", nil)]))
        #expect(seeded.status == 200, "\(seeded.json)")
        return world
    }

    static func code(_ answer: (status: Int, json: JSONValue), key: String = "records") -> String? {
        answer.json[key]?[0]?["serverErrorCode"]?.stringValue ?? answer.json["serverErrorCode"]?.stringValue
    }

    @Test("refused with a clear code, and nothing stored: bad shares, bad participants, bad places, strangers")
    func refusals() async throws {
        let world = try await Self.world()
        let carol = try world.auth.addUser()
        let carolToken = try world.auth.createWebAuthToken(for: carol, container: APIWorld.containerName)
        let share = { (body: String) in #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"create","record":\#(body)}]}"# }
        let many = (0..<100).map { #"{"userIdentity":{"userRecordName":"_user\#($0)"},"permission":"READ_ONLY"}"# }.joined(separator: ",")
        let aliceCases: [(String, String, String, String)] = [
            ("in the default zone", "private", #"{"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{}}}]}"#, "BAD_REQUEST"),
            ("in the public database", "public", #"{"operations":[{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"p1"}}}]}"#, "BAD_REQUEST"),
            ("without forRecord", "private", share(#"{"recordName":"s","recordType":"cloudkit.share","fields":{}}"#), "BAD_REQUEST"),
            ("of a missing root", "private", share(#"{"recordName":"s","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"nope"}}"#), "NOT_FOUND"),
            ("with an unknown permission", "private", share(#"{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"MAYBE"}"#), "BAD_REQUEST"),
            ("inviting by e-mail", "private", share(#"{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":{"emailAddress":"bob@example.com"}}}]}"#), "BAD_REQUEST"),
            ("with 101 participants", "private", share(#"{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[\#(many)]}"#), "LIMIT_EXCEEDED"),
            ("with a field that is not a share's", "private", share(#"{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{"cloudkit.other":{"value":1}}}"#), "BAD_REQUEST"),
        ]
        for (what, database, body, expected) in aliceCases {
            let answer = try await world.post("records/modify", body, database: database)
            #expect(Self.code(answer) == expected, "a share \(what): \(answer.json)")
        }
        // Nothing of them was stored: p1 has no share, the zone none either.
        let root = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Z"},"records":[{"recordName":"p1"}]}"#)
        #expect(root.json["records"]?[0]?["share"] == nil)
        let views = world.container.views
        let owner = DatabaseID(container: APIWorld.containerName, scope: .private, owner: world.alice)
        let stored = try world.container.store.environment.read { txn in
            try views.shares(inZone: ZoneID(zoneName: "Z", ownerName: world.alice), of: owner, txn)
        }
        #expect(stored.isEmpty)

        // One share per record; a zone share and hierarchy shares exclude each other.
        let first = try await world.post("records/modify", Script.share("s1", zone: "Z", root: "p1", bob: world.bob))
        let guid = try #require(first.json["records"]?[0]?["shortGUID"]?.stringValue, "\(first.json)")
        let nested = try await world.post("records/modify", Script.share("s2", zone: "Z", root: "t1", bob: world.bob))
        #expect(Self.code(nested) == "BAD_REQUEST", "t1 is inside s1: \(nested.json)")
        let whole = try await world.post("records/modify", Script.share("cloudkit.zoneshare", zone: "Z", bob: world.bob))
        #expect(Self.code(whole) == "BAD_REQUEST", "\(whole.json)")
        let asRecord = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"s1","recordType":"Task","fields":{}}}]}"#)
        #expect(Self.code(asRecord) == "BAD_REQUEST", "a share stays a share: \(asRecord.json)")

        // Strangers and bad requests on the participant's side.
        let bob: String?? = .some(world.bobToken)
        let carolAccepts = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: .some(carolToken))
        #expect(Self.code(carolAccepts, key: "results") == "ACCESS_DENIED", "\(carolAccepts.json)")
        let carolResolves = try await world.post("records/resolve", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: .some(carolToken))
        #expect(Self.code(carolResolves, key: "results") == "ACCESS_DENIED")
        let unknown = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"nosuchguid"}]}"#, database: "shared", token: bob)
        #expect(Self.code(unknown, key: "results") == "NOT_FOUND")
        let noGUIDs = try await world.post("records/accept", #"{"shortGUIDs":"x"}"#, database: "shared", token: bob)
        #expect(Self.code(noGUIDs) == "BAD_REQUEST")
        let anonymous = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: .some(nil))
        #expect(anonymous.status >= 400)
        _ = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        let zone = Script.sharedZone("Z", world)
        let bobCases: [(String, String, String)] = [
            ("records/modify", #"{\#(zone),"operations":[{"operationType":"forceUpdate","record":{"recordName":"s1","recordType":"cloudkit.share","fields":{}}}]}"#, "ACCESS_DENIED"),
            ("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Mine"}}}]}"#, "BAD_REQUEST"),
            ("records/query", #"{"query":{"recordType":"Task"}}"#, "ZONE_NOT_FOUND"),
            ("records/lookup", #"{"zoneID":{"zoneName":"Other","ownerRecordName":"\#(world.alice)"},"records":[{"recordName":"p1"}]}"#, "ZONE_NOT_FOUND"),
            ("records/modify", #"{"zoneID":{"zoneName":"Other","ownerRecordName":"\#(world.alice)"},"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Task","fields":{}}}]}"#, "ZONE_NOT_FOUND"),
        ]
        for (operation, body, expected) in bobCases {
            let answer = try await world.post(operation, body, database: "shared", token: bob)
            #expect(Self.code(answer, key: operation.hasPrefix("zones") ? "zones" : "records") == expected, "\(operation) \(body): \(answer.json)")
        }
    }

    @Test("a participant leaves by deleting the share; the owner deleting the share or its root ends it for everyone")
    func leavingAndDeleting() async throws {
        let world = try await Self.world()
        let bob: String?? = .some(world.bobToken)
        let zone = Script.sharedZone("Z", world)
        let saved = try await world.post("records/modify", Script.share("s1", zone: "Z", root: "p1", bob: world.bob))
        let guid = try #require(saved.json["records"]?[0]?["shortGUID"]?.stringValue)
        _ = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        #expect(try await world.post("zones/list", "", database: "shared", token: bob).json["zones"]?[0] != nil)

        // Bob leaves: his database loses the zone, alice's share keeps him as REMOVED.
        let left = try await world.post("records/modify", #"{\#(zone),"operations":[{"operationType":"forceDelete","record":{"recordName":"s1"}}]}"#, database: "shared", token: bob)
        #expect(left.json["records"]?[0]?["deleted"] == true, "\(left.json)")
        #expect(try await world.post("zones/list", "", database: "shared", token: bob).json["zones"] == .array([]))
        let share = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Z"},"records":[{"recordName":"s1"}]}"#)
        #expect(share.json["records"]?[0]?["participants"]?[1]?["acceptanceStatus"] == "REMOVED", "\(share.json)")
        // He may come back while he is still invited.
        _ = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        let back = try await world.post("records/lookup", #"{\#(zone),"records":[{"recordName":"t1"}]}"#, database: "shared", token: bob)
        #expect(back.json["records"]?[0]?["recordName"] == "t1", "\(back.json)")

        // Alice deletes the share: bob is refused and the root is free again.
        _ = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"forceDelete","record":{"recordName":"s1"}}]}"#)
        let refused = try await world.post("records/lookup", #"{\#(zone),"records":[{"recordName":"t1"}]}"#, database: "shared", token: bob)
        #expect(Self.code(refused) == "ACCESS_DENIED", "\(refused.json)")
        let root = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Z"},"records":[{"recordName":"p1"}]}"#)
        #expect(root.json["records"]?[0]?["share"] == nil, "\(root.json)")
        let unknown = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        #expect(Self.code(unknown, key: "results") == "NOT_FOUND")

        // Sharing p1 again, then deleting p1, deletes the share record with it.
        _ = try await world.post("records/modify", Script.share("s3", zone: "Z", root: "p1", bob: world.bob))
        _ = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"forceDelete","record":{"recordName":"p1"}}]}"#)
        let shareGone = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Z"},"records":[{"recordName":"s3"}]}"#)
        #expect(Self.code(shareGone) == "NOT_FOUND", "\(shareGone.json)")
        // And the views derived from the log agree with the live ones.
        #expect(try world.container.verify().isHealthy)
    }

    @Test("the owner deleting the zone ends every share of it: the participant's database changes report it gone")
    func zoneDeleted() async throws {
        let world = try await Self.world()
        let bob: String?? = .some(world.bobToken)
        let saved = try await world.post("records/modify", Script.share("cloudkit.zoneshare", zone: "Z", bob: world.bob))
        let guid = try #require(saved.json["records"]?[0]?["shortGUID"]?.stringValue)
        _ = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        let token = try #require(try await world.post("changes/database", "{}", database: "shared", token: bob).json["syncToken"]?.stringValue)
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Z"}}}]}"#)
        let changes = try await world.post("changes/database", #"{"syncToken":"\#(token)"}"#, database: "shared", token: bob)
        #expect(changes.json["zones"]?[0]?["deleted"] == true, "\(changes.json)")
        let read = try await world.post("records/lookup", #"{\#(Script.sharedZone("Z", world)),"records":[{"recordName":"p1"}]}"#, database: "shared", token: bob)
        #expect(Self.code(read) == "ACCESS_DENIED", "\(read.json)")
        let unknown = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: bob)
        #expect(Self.code(unknown, key: "results") == "NOT_FOUND")
        #expect(try world.container.verify().isHealthy)
    }

    @Test("a public permission lets anyone with the short GUID in; a database subscription in the shared database fires")
    func publicPermissionAndSubscriptions() async throws {
        let world = try await Self.world()
        let carol = try world.auth.addUser()
        let carolToken: String?? = .some(try world.auth.createWebAuthToken(for: carol, container: APIWorld.containerName))
        let zone = Script.sharedZone("Z", world)
        let saved = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudKit.share","fields":{"cloudkit.title":{"value":"Open"}},"publicPermission":"READ_ONLY"}}]}"#)
        let guid = try #require(saved.json["records"]?[0]?["shortGUID"]?.stringValue, "\(saved.json)")
        #expect(saved.json["records"]?[0]?["recordType"] == "cloudkit.share")

        let subscribed = try await world.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"shared","subscriptionType":"database"}}]}"#, database: "shared", token: carolToken)
        #expect(subscribed.status == 200, "\(subscribed.json)")
        let accepted = try await world.post("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: carolToken)
        #expect(accepted.json["results"]?[0]?["participantType"] == "PUBLIC_USER", "\(accepted.json)")
        let read = try await world.post("records/lookup", #"{\#(zone),"records":[{"recordName":"o1"}]}"#, database: "shared", token: carolToken)
        #expect(read.json["records"]?[0]?["recordName"] == "o1", "\(read.json)")
        let write = try await world.post("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"c1","recordType":"Task","fields":{}}}]}"#, database: "shared", token: carolToken)
        #expect(Self.code(write) == "ACCESS_DENIED", "\(write.json)")

        // Accepting fired carol's database subscription; alice's next change fires it again.
        let before = try world.container.notifications(for: carol).notifications
        #expect(before.count == 1 && before.first?.subscriptionID == "shared", "\(before)")
        _ = try await world.post("records/modify", Script.records("Z", [("n1", "Task", nil)]))
        let after = try world.container.notifications(for: carol).notifications
        #expect(after.count == 2, "\(after)")
        #expect(after.last?.database.scope == .shared)

        // Closing the public permission removes carol.
        _ = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"NONE"}}]}"#)
        let closed = try await world.post("records/lookup", #"{\#(zone),"records":[{"recordName":"o1"}]}"#, database: "shared", token: carolToken)
        #expect(Self.code(closed) == "ACCESS_DENIED", "\(closed.json)")
        #expect(try world.container.verify().isHealthy)
    }
}
