import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import Testing

/// What another signed-in user could get past the access rules (issue 40, items 1–6),
/// tried as that user would try it: through a live server's socket. Each test failed
/// on the main before the fix.
@Suite("Access rules leak nothing over HTTP")
struct AccessLeakTests {
    /// `Secret`: each user reads and writes only their own. `Dropbox`: anyone signed in
    /// may write, only the creator reads. `Post`: everyone reads, the creator writes.
    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Secret (
                "___recordID" REFERENCE QUERYABLE,
                title STRING QUERYABLE SORTABLE,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
            RECORD TYPE Dropbox (
                "___recordID" REFERENCE QUERYABLE,
                title STRING,
                GRANT READ TO "_creator",
                GRANT CREATE, WRITE TO "_icloud"
            );
            RECORD TYPE Post (
                "___recordID" REFERENCE QUERYABLE,
                title STRING,
                GRANT READ TO "_world",
                GRANT CREATE TO "_icloud",
                GRANT WRITE TO "_creator"
            );
        """

    /// One live server; calls as alice or bob.
    struct Session {
        let world: APIWorld
        let client: LiveClient

        /// The answer's status, JSON body and headers.
        struct Answer {
            let status: Int
            let json: JSONValue
            let headers: HTTPFields
        }

        func call(
            _ operation: String, _ body: String = "{}", database: String, token: String?,
            container: String = APIWorld.containerName, apiToken: String? = nil
        ) async throws -> Answer {
            var query = "ckAPIToken=\(apiToken ?? world.apiToken)"
            if let token { query += "&ckWebAuthToken=\(token)" }
            // Notifications are per user, not per database: no database in their path.
            let path = database.isEmpty ? operation : "\(database)/\(operation)"
            let separator = path.contains("?") ? "&" : "?"
            let uri = "/database/1/\(container)/development/\(path)\(separator)\(query)"
            let method: HTTPRequest.Method = operation.hasSuffix("list") || operation.hasPrefix("notifications") ? .get : .post
            return try await client.execute(uri: uri, method: method, body: .init(string: body)) { response in
                Answer(
                    status: Int(response.status.code), json: try JSONValue.parse(Data(response.body.readableBytesView)),
                    headers: response.headers)
            }
        }

        func alice(_ operation: String, _ body: String = "{}", database: String = "public") async throws -> JSONValue {
            try await call(operation, body, database: database, token: world.aliceToken).json
        }

        func bob(_ operation: String, _ body: String = "{}", database: String = "public") async throws -> JSONValue {
            try await call(operation, body, database: database, token: world.bobToken).json
        }
    }

    static func live(_ body: @escaping @Sendable (Session) async throws -> Void) async throws {
        let world = try APIWorld()
        try await world.container.importSchema(
            schema, into: SchemaID(container: APIWorld.containerName, environment: .development))
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(Session(world: world, client: client)) }
    }

    static func save(_ items: [(name: String, type: String, title: String)], zone: String? = nil) -> String {
        let operations = items.map { item in
            #"{"operationType":"create","record":{"recordName":"\#(item.name)","recordType":"\#(item.type)","fields":{"title":{"value":"\#(item.title)"}}}}"#
        }
        let zoneID = zone.map { #""zoneID":{"zoneName":"\#($0)"},"# } ?? ""
        return #"{\#(zoneID)"operations":[\#(operations.joined(separator: ","))]}"#
    }

    static func names(_ records: JSONValue?) -> [String] {
        records?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
    }

    /// Every page of `query` (a `records/query` body's `query` member), `resultsLimit` 1,
    /// as `user`: the names returned and each page's continuation marker.
    static func pages(
        _ s: Session, _ query: String, zone: String = "", database: String = "public", token: String
    ) async throws -> (names: [String], markers: [String]) {
        var names: [String] = []
        var markers: [String] = []
        var marker: String?
        for _ in 0..<50 {
            let continuation = marker.map { #","continuationMarker":"\#($0)""# } ?? ""
            let answer = try await s.call(
                "records/query", #"{\#(zone)"resultsLimit":1,"query":\#(query)\#(continuation)}"#, database: database,
                token: token)
            #expect(answer.status == 200, "\(answer.json)")
            names += Self.names(answer.json["records"])
            marker = answer.json["continuationMarker"]?.stringValue
            guard let marker else { break }
            markers.append(marker)
        }
        return (names, markers)
    }

    /// Whether any of `markers` holds `text` in the clear.
    static func reveals(_ markers: [String], _ text: String) -> Bool {
        markers.contains { marker in
            guard let bytes = Data(base64Encoded: marker) else { return false }
            return bytes.range(of: Data(text.utf8)) != nil
        }
    }

    // MARK: 1. Query cursors

    @Test("public: a user paging one record at a time sees only their own, and no cursor names anyone else's")
    func publicCursorsHideOthers() async throws {
        try await Self.live { s in
            let alices = (0..<5).map { ("secret-\($0)", "Secret", "alice-title-\($0)") }
            #expect(Self.names(try await s.alice("records/modify", Self.save(alices))["records"]).count == 5)
            #expect(Self.names(try await s.bob("records/modify", Self.save([("a-bob", "Secret", "bob-title")]))["records"]) == ["a-bob"])
            // Name order: bob's sorts first, alice's after it.
            let byName = try await Self.pages(s, #"{"recordType":"Secret"}"#, token: s.world.bobToken)
            #expect(byName.names == ["a-bob"])
            // Only hidden records follow bob's: no cursor, so nothing says they exist.
            #expect(byName.markers.isEmpty, "a cursor after bob's last record tells of hidden ones")
            // Sorted by an indexed field, alice's first: still only bob's, and no cursor
            // carries a name or sort value of alice's.
            let sorted = try await Self.pages(
                s, #"{"recordType":"Secret","sortBy":[{"fieldName":"title","ascending":true}]}"#, token: s.world.bobToken)
            #expect(sorted.names == ["a-bob"])
            for index in 0..<5 {
                #expect(!Self.reveals(byName.markers + sorted.markers, "secret-\(index)"))
                #expect(!Self.reveals(byName.markers + sorted.markers, "alice-title-\(index)"))
            }
            // Alice pages through her five; her cursors are hers alone.
            let hers = try await Self.pages(
                s, #"{"recordType":"Secret","sortBy":[{"fieldName":"title","ascending":true}]}"#, token: s.world.aliceToken)
            #expect(hers.names == (0..<5).map { "secret-\($0)" })
            #expect(!Self.reveals(hers.markers, "secret-1"), "a cursor is encrypted, not only signed")
            let marker = try #require(hers.markers.first)
            let stolen = try await s.call(
                "records/query", #"{"resultsLimit":1,"query":{"recordType":"Secret"},"continuationMarker":"\#(marker)"}"#,
                database: "public", token: s.world.bobToken)
            #expect(stolen.json["serverErrorCode"] == "BAD_REQUEST", "another user's cursor: \(stolen.json)")
            let anonymous = try await s.call(
                "records/query", #"{"resultsLimit":1,"query":{"recordType":"Secret"},"continuationMarker":"\#(marker)"}"#,
                database: "public", token: nil)
            #expect(anonymous.json["serverErrorCode"] != nil, "\(anonymous.json)")
        }
    }

    @Test("shared: a participant paging a hierarchy share sees no name of a record outside it")
    func sharedCursorsHideOutside() async throws {
        try await Self.live { s in
            let world = s.world
            _ = try await s.alice("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Home"}}}]}"#, database: "private")
            // `a-root` is shared; `b-hidden-*` sit outside the share, after it in name order.
            let seeded = try await s.alice(
                "records/modify",
                Self.save([("a-root", "Place", "root")] + (0..<4).map { ("b-hidden-\($0)", "Place", "hidden-title-\($0)") }, zone: "Home"),
                database: "private")
            #expect(Self.names(seeded["records"]).count == 5, "\(seeded)")
            let shared = try await s.alice(
                "records/modify", SharingRoutesTests.share("s1", zone: "Home", root: "a-root", bob: world.bob), database: "private")
            let guid = try #require(shared["records"]?[0]?["shortGUID"]?.stringValue, "\(shared)")
            let accepted = try await s.bob("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared")
            #expect(accepted["results"]?[0]?["participantStatus"] == "ACCEPTED", "\(accepted)")
            let zone = #""zoneID":{"zoneName":"Home","ownerRecordName":"\#(world.alice)"},"#
            let pages = try await Self.pages(s, #"{"recordType":"Place"}"#, zone: zone, database: "shared", token: world.bobToken)
            #expect(pages.names == ["a-root"])
            #expect(pages.markers.isEmpty, "a cursor tells bob records outside his share exist")
            for index in 0..<4 { #expect(!Self.reveals(pages.markers, "b-hidden-\(index)")) }
        }
    }

    // MARK: 2. Conflicts

    @Test("a stale-tag delete by a non-writer is ACCESS_DENIED; a write-only user's conflict carries no server record")
    func conflictsHandBackOnlyWhatTheCallerReads() async throws {
        try await Self.live { s in
            let post = try await s.alice("records/modify", Self.save([("p1", "Post", "alice's post")]))
            #expect(Self.names(post["records"]) == ["p1"], "\(post)")
            let staleDelete = try await s.bob(
                "records/modify", #"{"operations":[{"operationType":"delete","record":{"recordName":"p1","recordChangeTag":"stale"}}]}"#)
            #expect(staleDelete["records"]?[0]?["serverErrorCode"] == "ACCESS_DENIED", "\(staleDelete)")
            #expect(staleDelete["records"]?[0]?["serverRecord"] == nil)

            let drop = try await s.alice("records/modify", Self.save([("d1", "Dropbox", "alice's eyes only")]))
            #expect(Self.names(drop["records"]) == ["d1"], "\(drop)")
            let staleUpdate = try await s.bob(
                "records/modify",
                #"{"operations":[{"operationType":"update","record":{"recordName":"d1","recordType":"Dropbox","recordChangeTag":"stale","fields":{"title":{"value":"bob's"}}}}]}"#)
            #expect(staleUpdate["records"]?[0]?["serverErrorCode"] == "CONFLICT", "\(staleUpdate)")
            #expect(staleUpdate["records"]?[0]?["serverRecord"] == nil, "bob may write but not read d1: \(staleUpdate)")
            // The creator's own conflict still carries the record to merge with.
            let ownStale = try await s.alice(
                "records/modify",
                #"{"operations":[{"operationType":"update","record":{"recordName":"d1","recordType":"Dropbox","recordChangeTag":"stale","fields":{"title":{"value":"x"}}}}]}"#)
            #expect(ownStale["records"]?[0]?["serverRecord"]?["fields"]?["title"]?["value"] == "alice's eyes only", "\(ownStale)")
        }
    }

    // MARK: 3. Query subscriptions

    @Test("a query subscription fires only for records its owner may read, and a hidden one does not use up firesOnce")
    func subscriptionsFireOnlyForReadableRecords() async throws {
        try await Self.live { s in
            let subscribed = try await s.bob("subscriptions/modify", #"""
                {"operations":[{"operationType":"create","subscription":{"subscriptionID":"secrets","subscriptionType":"query",
                  "query":{"recordType":"Secret","filterBy":[{"comparator":"BEGINS_WITH","fieldName":"title","fieldValue":{"value":"alice"}}]},
                  "firesOn":["create","update","delete"],"firesOnce":true}}]}
                """#)
            #expect(subscribed["subscriptions"]?[0]?["subscriptionID"] == "secrets", "\(subscribed)")
            // Alice's secret matches the filter, but bob may not read it.
            _ = try await s.alice("records/modify", Self.save([("s1", "Secret", "alice-secret")]))
            _ = try await s.alice("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"s1"}}]}"#)
            let quiet = try await s.call("notifications/poll?timeout=0", database: "", token: s.world.bobToken)
            #expect(quiet.json["notifications"] == [], "\(quiet.json)")
            // Bob's own matching record fires it, once: the subscription was not used up.
            _ = try await s.bob("records/modify", Self.save([("s2", "Secret", "alice-lookalike")]))
            let fired = try await s.call("notifications/poll?timeout=0", database: "", token: s.world.bobToken)
            #expect(Self.names(fired.json["notifications"]) == ["s2"], "\(fired.json)")
        }
    }

    // MARK: 4. A participant's references

    @Test("a participant's VALIDATE reference to a record outside the share is answered as one to a missing record")
    func participantReferencesDoNotProbe() async throws {
        try await Self.live { s in
            let world = s.world
            _ = try await s.alice("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Home"}}}]}"#, database: "private")
            _ = try await s.alice("records/modify", Self.save([("root", "Place", "r"), ("outside", "Place", "o")], zone: "Home"), database: "private")
            let shared = try await s.alice(
                "records/modify",
                SharingRoutesTests.share("s1", zone: "Home", root: "root", bob: world.bob, permission: "READ_WRITE"),
                database: "private")
            let guid = try #require(shared["records"]?[0]?["shortGUID"]?.stringValue, "\(shared)")
            _ = try await s.bob("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared")
            func child(_ name: String, referring target: String) -> String {
                #"{"zoneID":{"zoneName":"Home","ownerRecordName":"\#(world.alice)"},"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Place","parent":{"recordName":"root"},"fields":{"link":{"value":{"recordName":"\#(target)","action":"VALIDATE"}}}}}]}"#
            }
            let toMissing = try await s.bob("records/modify", child("c1", referring: "nowhere"), database: "shared")
            let toOutside = try await s.bob("records/modify", child("c2", referring: "outside"), database: "shared")
            let missingCode = toMissing["records"]?[0]?["serverErrorCode"]?.stringValue
            #expect(missingCode == "VALIDATING_REFERENCE_ERROR", "\(toMissing)")
            #expect(toOutside["records"]?[0]?["serverErrorCode"]?.stringValue == missingCode, "\(toOutside)")
            let reasonMissing = toMissing["records"]?[0]?["reason"]?.stringValue?.replacingOccurrences(of: "nowhere", with: "X")
            let reasonOutside = toOutside["records"]?[0]?["reason"]?.stringValue?.replacingOccurrences(of: "outside", with: "X")
            #expect(reasonMissing == reasonOutside)
            // Nothing pins alice's record: she deletes it.
            let deleted = try await s.alice(
                "records/modify", #"{"zoneID":{"zoneName":"Home"},"operations":[{"operationType":"delete","record":{"recordName":"outside"}}]}"#,
                database: "private")
            #expect(deleted["records"]?[0]?["deleted"] == true, "\(deleted)")
        }
    }

    // MARK: 5. Web auth tokens and download URLs

    @Test("a web auth token signs its user in to its own container only")
    func webAuthTokensBelongToOneContainer() async throws {
        try await Self.live { s in
            let other = "iCloud.com.example.other"
            let otherAPIToken = try s.world.auth.createAPIToken(container: other, environment: .development)
            let refused = try await s.call(
                "zones/list", database: "private", token: s.world.aliceToken, container: other, apiToken: otherAPIToken)
            #expect(refused.status == 401, "\(refused.json)")
            #expect(refused.json["serverErrorCode"] == "AUTHENTICATION_FAILED")
            let ownToken = try s.world.auth.createWebAuthToken(for: s.world.alice, container: other)
            let opened = try await s.call("zones/list", database: "private", token: ownToken, container: other, apiToken: otherAPIToken)
            #expect(opened.status == 200, "\(opened.json)")
            // The home container's token still works there.
            #expect(try await s.call("zones/list", database: "private", token: s.world.aliceToken).status == 200)
        }
    }

    // MARK: 6. Zones named for another user

    @Test("a private zone naming another user as owner is refused")
    func zonesBelongToTheirCreator() async throws {
        try await Self.live { s in
            let world = s.world
            let forged = try await s.bob(
                "zones/modify",
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip","ownerRecordName":"\#(world.alice)"}}}]}"#,
                database: "private")
            #expect(forged["zones"]?[0]?["serverErrorCode"] == "ACCESS_DENIED", "\(forged)")
            let listed = try await s.bob("zones/list", database: "private")
            #expect(!(listed["zones"]?.arrayValue ?? []).contains { $0["zoneID"]?["zoneName"] == "Trip" }, "\(listed)")
            let own = try await s.bob(
                "zones/modify",
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip","ownerRecordName":"\#(world.bob)"}}}]}"#,
                database: "private")
            #expect(own["zones"]?[0]?["zoneID"]?["ownerRecordName"]?.stringValue == world.bob, "\(own)")
        }
    }
}
