import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import Testing

/// Sharing over real sockets (issue 17's "Done when"): alice shares a zone, then a
/// hierarchy, with bob; bob accepts and reads, follows and (when allowed) writes
/// through his shared database; alice's changes to the share take effect at once.
@Suite("Sharing over HTTP")
struct SharingRoutesTests {
    /// One live server and the two users' calls to it.
    struct Session {
        let world: APIWorld
        let client: LiveClient

        /// POSTs (or GETs, for `…/list`) `body` to `operation` in `database` as `token`'s user.
        func call(_ operation: String, _ body: String = "{}", database: String, token: String) async throws -> JSONValue {
            let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(token)"
            let uri = "/database/1/\(APIWorld.containerName)/development/\(database)/\(operation)?\(query)"
            return try await client.execute(
                uri: uri, method: operation.hasSuffix("list") ? .get : .post, body: .init(string: body)
            ) { response in
                try JSONValue.parse(Data(response.body.readableBytesView))
            }
        }

        func alice(_ operation: String, _ body: String = "{}", database: String = "private") async throws -> JSONValue {
            try await call(operation, body, database: database, token: world.aliceToken)
        }

        func bob(_ operation: String, _ body: String = "{}", database: String = "shared") async throws -> JSONValue {
            try await call(operation, body, database: database, token: world.bobToken)
        }
    }

    static func live(_ body: @escaping @Sendable (Session) async throws -> Void) async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(Session(world: world, client: client)) }
    }

    static func names(_ records: JSONValue?) -> Set<String> {
        guard case .array(let items)? = records else { return [] }
        return Set(items.compactMap { $0["recordName"]?.stringValue })
    }

    static func code(_ json: JSONValue, record index: Int? = nil, key: String = "records") -> String? {
        if let index { return json[key]?[index]?["serverErrorCode"]?.stringValue }
        return json["serverErrorCode"]?.stringValue
    }

    /// A share record operation (`create` or `forceUpdate`) in `zone`.
    static func share(
        _ name: String, zone: String, root: String? = nil, bob: String?, permission: String = "READ_ONLY",
        operation: String = "create"
    ) -> String {
        let participants = bob.map { #"[{"userIdentity":{"userRecordName":"\#($0)"},"permission":"\#(permission)"}]"# } ?? "[]"
        let forRecord = root.map { #","forRecord":{"recordName":"\#($0)"}"# } ?? ""
        return #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[{"operationType":"\#(operation)","record":{"recordName":"\#(name)","recordType":"cloudkit.share","fields":{"cloudkit.title":{"value":"\#(zone)"}},"publicPermission":"NONE","participants":\#(participants)\#(forRecord)}}]}"#
    }

    static func records(_ zone: String, _ items: [(name: String, type: String, parent: String?)], operation: String = "create") -> String {
        let operations = items.map { item in
            let parent = item.parent.map { #","parent":{"recordName":"\#($0)"}"# } ?? ""
            return #"{"operationType":"\#(operation)","record":{"recordName":"\#(item.name)","recordType":"\#(item.type)","fields":{"title":{"value":"\#(item.name)"}}\#(parent)}}"#
        }
        return #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(operations.joined(separator: ","))]}"#
    }

    /// Bob's shared zone `zone` of alice, as a `zoneID` member.
    static func sharedZone(_ zone: String, _ world: APIWorld) -> String {
        #""zoneID":{"zoneName":"\#(zone)","ownerRecordName":"\#(world.alice)"}"#
    }

    @Test("a zone-wide share: accept, read, follow, refused write, read-write, removal")
    func zoneShare() async throws {
        try await Self.live { s in
            let world = s.world
            let zone = Self.sharedZone("Trip", world)
            _ = try await s.alice("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#)
            let seeded = try await s.alice("records/modify", Self.records("Trip", [("a1", "Place", nil), ("a2", "Place", nil)]))
            #expect(Self.names(seeded["records"]) == ["a1", "a2"], "\(seeded)")

            let saved = try await s.alice("records/modify", Self.share("cloudkit.zoneshare", zone: "Trip", bob: world.bob))
            let shareRecord = try #require(saved["records"]?[0])
            let guid = try #require(shareRecord["shortGUID"]?.stringValue, "\(saved)")
            #expect(shareRecord["participants"]?[1]?["acceptanceStatus"] == "INVITED")
            #expect(shareRecord["owner"]?["userIdentity"]?["userRecordName"]?.stringValue == world.alice)

            // Before accepting: nothing in bob's shared database; the metadata resolves.
            #expect(try await s.bob("zones/list")["zones"] == .array([]))
            let resolved = try await s.bob("records/resolve", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            #expect(resolved["results"]?[0]?["participantStatus"] == "INVITED", "\(resolved)")
            #expect(resolved["results"]?[0]?["zoneID"]?["zoneName"] == "Trip")
            let beforeAccept = try await s.bob("changes/database")
            let startToken = try #require(beforeAccept["syncToken"]?.stringValue)

            let accepted = try await s.bob("records/accept", #"{"shortGUIDs":[{"value":"https://cumulus.example/share/\#(guid)"}]}"#)
            #expect(accepted["results"]?[0]?["participantStatus"] == "ACCEPTED", "\(accepted)")
            #expect(accepted["results"]?[0]?["databaseScope"] == "SHARED")
            let zones = try await s.bob("zones/list")
            #expect(zones["zones"]?[0]?["zoneID"]?["zoneName"] == "Trip", "\(zones)")
            #expect(zones["zones"]?[0]?["zoneID"]?["ownerRecordName"]?.stringValue == world.alice)
            let appeared = try await s.bob("changes/database", #"{"syncToken":"\#(startToken)"}"#)
            #expect(appeared["zones"]?[0]?["zoneID"]?["zoneName"] == "Trip", "\(appeared)")
            let databaseToken = try #require(appeared["syncToken"]?.stringValue)

            // Fetch, query and follow changes.
            let lookup = try await s.bob("records/lookup", #"{\#(zone),"records":[{"recordName":"a1"}]}"#)
            #expect(lookup["records"]?[0]?["fields"]?["title"]?["value"] == "a1", "\(lookup)")
            let query = try await s.bob("records/query", #"{\#(zone),"query":{"recordType":"Place"}}"#)
            #expect(Self.names(query["records"]) == ["a1", "a2"], "\(query)")
            let changes = try await s.bob("changes/zone", #"{"zones":[{\#(zone)}]}"#)
            let changed = Self.names(changes["zones"]?[0]?["records"])
            #expect(changed.isSuperset(of: ["a1", "a2", "cloudkit.zoneshare"]), "\(changes)")
            let zoneToken = try #require(changes["zones"]?[0]?["syncToken"]?.stringValue)

            // Read-only: bob's write is refused and nothing lands.
            let refused = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"b1","recordType":"Place","fields":{}}}]}"#)
            #expect(Self.code(refused, record: 0) == "ACCESS_DENIED", "\(refused)")
            let aliceSide = try await s.alice("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"b1"}]}"#)
            #expect(Self.code(aliceSide, record: 0) == "NOT_FOUND")

            // Read-write: bob's write lands in alice's zone and her feed shows it.
            let upgraded = try await s.alice("records/modify", Self.share("cloudkit.zoneshare", zone: "Trip", bob: world.bob, permission: "READ_WRITE", operation: "forceUpdate"))
            #expect(upgraded["records"]?[0]?["participants"]?[1]?["acceptanceStatus"] == "ACCEPTED", "\(upgraded)")
            let written = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"b1","recordType":"Place","fields":{"title":{"value":"from bob"}}}}]}"#)
            #expect(written["records"]?[0]?["recordName"] == "b1", "\(written)")
            let aliceChanges = try await s.alice("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Trip"}}]}"#)
            let mine = try #require(aliceChanges["zones"]?[0]?["records"])
            let aliceSaw = Self.names(mine)
            #expect(aliceSaw.contains("b1"))
            guard case .array(let items) = mine else { return }
            #expect(items.first { $0["recordName"] == "b1" }?["modified"]?["userRecordName"]?.stringValue == world.bob)
            let bobChanges = try await s.bob("changes/zone", #"{"zones":[{\#(zone),"syncToken":"\#(zoneToken)"}]}"#)
            // b1, and the share record alice changed; nothing bob already had.
            let since = Self.names(bobChanges["zones"]?[0]?["records"])
            #expect(since.contains("b1") && since.isSubset(of: ["b1", "cloudkit.zoneshare"]), "\(bobChanges)")

            // Removed: the next read is refused, and database changes report the zone gone.
            _ = try await s.alice("records/modify", Self.share("cloudkit.zoneshare", zone: "Trip", bob: nil, operation: "forceUpdate"))
            let afterRemoval = try await s.bob("records/lookup", #"{\#(zone),"records":[{"recordName":"a1"}]}"#)
            #expect(Self.code(afterRemoval, record: 0) == "ACCESS_DENIED", "\(afterRemoval)")
            let gone = try await s.bob("changes/database", #"{"syncToken":"\#(databaseToken)"}"#)
            #expect(gone["zones"]?[0]?["deleted"] == true, "\(gone)")
            #expect(gone["zones"]?[0]?["zoneID"]?["zoneName"] == "Trip")
            #expect(try await s.bob("zones/list")["zones"] == .array([]))
            let stale = try await s.bob("changes/zone", #"{"zones":[{\#(zone),"syncToken":"\#(zoneToken)"}]}"#)
            #expect(stale["zones"]?[0]?["serverErrorCode"] == "ACCESS_DENIED", "\(stale)")
        }
    }

    @Test("a hierarchy share: only the root and what reaches it through parent is visible or writable")
    func hierarchyShare() async throws {
        try await Self.live { s in
            let world = s.world
            let zone = Self.sharedZone("Projects", world)
            _ = try await s.alice("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Projects"}}}]}"#)
            // p1 ← t1 ← s1 through parent; o1 stands alone; o2 refers to p1 by a field only.
            _ = try await s.alice("records/modify", Self.records("Projects", [
                ("p1", "Project", nil), ("t1", "Task", "p1"), ("s1", "Task", "t1"), ("o1", "Task", nil),
            ]))
            _ = try await s.alice("records/modify", #"{"zoneID":{"zoneName":"Projects"},"operations":[{"operationType":"create","record":{"recordName":"o2","recordType":"Task","fields":{"about":{"value":{"recordName":"p1","action":"NONE"},"type":"REFERENCE"}}}}]}"#)
            let saved = try await s.alice("records/modify", Self.share("share-p1", zone: "Projects", root: "p1", bob: world.bob))
            let guid = try #require(saved["records"]?[0]?["shortGUID"]?.stringValue, "\(saved)")
            let root = try await s.alice("records/lookup", #"{"zoneID":{"zoneName":"Projects"},"records":[{"recordName":"p1"}]}"#)
            #expect(root["records"]?[0]?["share"]?["recordName"] == "share-p1", "the root points at its share: \(root)")

            _ = try await s.bob("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            let lookup = try await s.bob("records/lookup", #"{\#(zone),"records":[{"recordName":"p1"},{"recordName":"t1"},{"recordName":"s1"},{"recordName":"o1"},{"recordName":"o2"}]}"#)
            #expect((0..<3).allSatisfy { lookup["records"]?[$0]?["serverErrorCode"] == nil }, "\(lookup)")
            #expect(Self.code(lookup, record: 3) == "NOT_FOUND" && Self.code(lookup, record: 4) == "NOT_FOUND", "\(lookup)")
            let query = try await s.bob("records/query", #"{\#(zone),"query":{"recordType":"Task"}}"#)
            #expect(Self.names(query["records"]) == ["t1", "s1"], "\(query)")
            let changes = try await s.bob("changes/zone", #"{"zones":[{\#(zone)}]}"#)
            #expect(Self.names(changes["zones"]?[0]?["records"]) == ["p1", "t1", "s1", "share-p1"], "\(changes)")
            let zoneToken = try #require(changes["zones"]?[0]?["syncToken"]?.stringValue)
            let databaseToken = try #require(try await s.bob("changes/database")["syncToken"]?.stringValue)

            let refused = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"t2","recordType":"Task","fields":{},"parent":{"recordName":"p1"}}}]}"#)
            #expect(Self.code(refused, record: 0) == "ACCESS_DENIED", "\(refused)")
            _ = try await s.alice("records/modify", Self.share("share-p1", zone: "Projects", bob: world.bob, permission: "READ_WRITE", operation: "forceUpdate"))
            let written = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"t2","recordType":"Task","fields":{},"parent":{"recordName":"p1"}}}]}"#)
            #expect(written["records"]?[0]?["recordName"] == "t2", "\(written)")
            // Outside the hierarchy bob can neither create nor change, nor delete the root.
            let outside = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"o3","recordType":"Task","fields":{}}},{"operationType":"forceUpdate","record":{"recordName":"o1","recordType":"Task","fields":{"title":{"value":"x"}}}}],"atomic":false}"#)
            #expect(Self.code(outside, record: 0) == "ACCESS_DENIED" && Self.code(outside, record: 1) == "ACCESS_DENIED", "\(outside)")
            let rootDelete = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"forceDelete","record":{"recordName":"p1"}}]}"#)
            #expect(Self.code(rootDelete, record: 0) == "ACCESS_DENIED", "\(rootDelete)")
            // Alice's feed shows bob's record; bob's shows it and, later, its deletion,
            // but nothing of the records outside.
            let aliceChanges = try await s.alice("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Projects"}}]}"#)
            let aliceSaw = Self.names(aliceChanges["zones"]?[0]?["records"])
            #expect(aliceSaw.contains("t2"))
            _ = try await s.alice("records/modify", #"{"zoneID":{"zoneName":"Projects"},"operations":[{"operationType":"forceDelete","record":{"recordName":"o1"}}]}"#)
            _ = try await s.bob("records/modify", #"{\#(zone),"operations":[{"operationType":"forceDelete","record":{"recordName":"s1"}}]}"#)
            let followed = try await s.bob("changes/zone", #"{"zones":[{\#(zone),"syncToken":"\#(zoneToken)"}]}"#)
            let feed = try #require(followed["zones"]?[0]?["records"])
            // The share and the tags that references moved come too; o1's deletion does not.
            let feedNames = Self.names(feed)
            #expect(feedNames.isSuperset(of: ["t2", "s1"]) && feedNames.isDisjoint(with: ["o1", "o2", "o3"]), "\(followed)")
            guard case .array(let entries) = feed else { return }
            #expect(entries.first { $0["recordName"] == "s1" }?["deleted"] == true)

            // Alice moves t2 out of the hierarchy: for bob it is deleted.
            let movedFrom = try #require(followed["zones"]?[0]?["syncToken"]?.stringValue)
            _ = try await s.alice("records/modify", #"{"zoneID":{"zoneName":"Projects"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"t2","recordType":"Task","fields":{},"parent":null}}]}"#)
            let moved = try await s.bob("changes/zone", #"{"zones":[{\#(zone),"syncToken":"\#(movedFrom)"}]}"#)
            // (p1 comes too: the parent reference that left changed its tag.)
            guard case .array(let movedEntries)? = moved["zones"]?[0]?["records"] else {
                Issue.record("no records: \(moved)")
                return
            }
            #expect(movedEntries.first { $0["recordName"] == "t2" }?["deleted"] == true, "\(moved)")
            let movedLookup = try await s.bob("records/lookup", #"{\#(zone),"records":[{"recordName":"t2"}]}"#)
            #expect(Self.code(movedLookup, record: 0) == "NOT_FOUND")

            // Removed: refused at once, and the zone leaves bob's database.
            _ = try await s.alice("records/modify", Self.share("share-p1", zone: "Projects", bob: nil, operation: "forceUpdate"))
            let afterRemoval = try await s.bob("records/lookup", #"{\#(zone),"records":[{"recordName":"p1"}]}"#)
            #expect(Self.code(afterRemoval, record: 0) == "ACCESS_DENIED", "\(afterRemoval)")
            let gone = try await s.bob("changes/database", #"{"syncToken":"\#(databaseToken)"}"#)
            #expect(gone["zones"]?[0]?["deleted"] == true, "\(gone)")
        }
    }
}
