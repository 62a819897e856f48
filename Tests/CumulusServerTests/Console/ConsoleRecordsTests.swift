import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import Testing

/// The console's records pages through a live socket: the Web Services API under
/// `/console/database/1/…` as the session's user, with the CSRF token on every call; an
/// operator acting as a user (recorded, read only); what a delete would take and who
/// refers to a record; and the data as of a past commit, for operators, read only, within
/// its budgets.
@Suite("Web console: records")
struct ConsoleRecordsTests {
    typealias Browser = ConsoleTests.Browser

    /// A signed-in browser's cookie and CSRF token.
    struct Session {
        let cookie: String
        let csrf: String

        var headers: [String: String] { ["Cookie": cookie, "X-Cumulus-CSRF": csrf, "Content-Type": "application/json"] }
    }

    static func signIn(_ browser: Browser, _ user: String) async throws -> Session {
        let answer = try await browser.signIn(user)
        return Session(
            cookie: try #require(answer.cookie), csrf: try #require(answer.json?["csrf"]?.stringValue))
    }

    /// A Web Services call of the console's page, in the private database (or `database`).
    static func call(
        _ browser: Browser, _ session: Session?, _ operation: String, _ body: String = "{}", database: String = "private",
        query: String = "", csrf: Bool = true
    ) async throws -> LiveExchange {
        var headers = session?.headers ?? [:]
        if !csrf { headers["X-Cumulus-CSRF"] = nil }
        let path = "/console/database/1/\(APIWorld.containerName)/development/\(database)/\(operation)\(query)"
        return try await browser.send(.post, path, headers: headers, body: body)
    }

    static func zoneNames(_ answer: LiveExchange) -> [String] {
        (answer.json?["zones"]?.arrayValue ?? []).compactMap { $0["zoneID"]?["zoneName"]?.stringValue }.sorted()
    }

    static let createLists = #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#

    @Test("the Web Services API under /console answers as the session's user, in their own databases, and only with the CSRF token")
    func databaseAsTheSessionsUser() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            let alice = try await Self.signIn(browser, world.alice)
            let bob = try await Self.signIn(browser, world.bob)

            let alicesZones = try await Self.call(browser, alice, "zones/list")
            #expect(alicesZones.status == 200, "\(alicesZones.text)")
            #expect(Self.zoneNames(alicesZones) == ["Lists", "_defaultZone"])
            #expect(alicesZones.header("Content-Security-Policy") != nil, "a console answer")
            #expect(Self.zoneNames(try await Self.call(browser, bob, "zones/list")) == ["_defaultZone"], "bob sees his own")

            // A write through the console is the user's own, as through CloudKit's API.
            let saved = try await Self.call(
                browser, bob, "records/modify",
                #"{"operations":[{"operationType":"create","record":{"recordName":"note","recordType":"Note","fields":{"text":{"value":"mine"}}}}]}"#)
            #expect(saved.status == 200 && saved.json?["records"]?[0]?["created"]?["userRecordName"]?.stringValue == world.bob)
            let bobs = try await world.post("records/lookup", #"{"records":[{"recordName":"note"}]}"#, token: world.bobToken)
            #expect(bobs.json["records"]?[0]?["fields"]?["text"]?["value"]?.stringValue == "mine")

            // No CSRF token, no session, a CloudKit token instead of a session: nothing.
            #expect(try await Self.call(browser, alice, "zones/list", csrf: false).status == 403)
            #expect(try await Self.call(browser, nil, "zones/list").status == 401)
            let withToken = try await Self.call(browser, nil, "zones/list", query: "?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)")
            #expect(withToken.status == 401, "the console's paths take the console's session only")
            // Only database routes live under the console.
            let tokens = try await browser.send(
                .post, "/console/database/1/\(APIWorld.containerName)/development/tokens/create", headers: alice.headers, body: "{}")
            #expect(tokens.status == 404)
        }
    }

    @Test("an operator acts as a user: every start recorded, reads as them, writes refused; a user may not act as anyone")
    func actingAsAUser() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            _ = try await world.post(
                "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Bobs"}}}]}"#,
                token: world.bobToken)
            let alice = try await Self.signIn(browser, world.alice)
            let bob = try await Self.signIn(browser, world.bob)
            let act = #"{"user":"\#(world.bob)"}"#
            let refused = try await browser.send(.post, "/console/session/act", headers: bob.headers, body: #"{"user":"\#(world.alice)"}"#)
            #expect(refused.status == 403, "\(refused.text)")
            var noCSRF = alice.headers
            noCSRF["X-Cumulus-CSRF"] = nil
            #expect(try await browser.send(.post, "/console/session/act", headers: noCSRF, body: act).status == 403)
            let nobody = try await browser.send(.post, "/console/session/act", headers: alice.headers, body: #"{"user":"_nobody"}"#)
            #expect(nobody.status == 400, "\(nobody.text)")

            let acting = try await browser.send(.post, "/console/session/act", headers: alice.headers, body: act)
            #expect(acting.status == 200 && acting.json?["actingAs"]?.stringValue == world.bob, "\(acting.text)")
            #expect(Self.zoneNames(try await Self.call(browser, alice, "zones/list")) == ["Bobs", "_defaultZone"], "what bob sees")
            let write = try await Self.call(browser, alice, "zones/modify", Self.createLists)
            #expect(write.status == 403 && write.text.contains("acting as"), "\(write.text)")
            let recorded = try await browser.send(.get, "/console/api/acting", headers: alice.headers)
            let first = recorded.json?[0]
            #expect(first?["operator"]?.stringValue == world.alice && first?["user"]?.stringValue == world.bob)
            #expect(try await browser.send(.get, "/console/api/acting", headers: bob.headers).status == 403)

            let stopped = try await browser.send(.delete, "/console/session/act", headers: alice.headers)
            #expect(stopped.status == 200 && stopped.json?["actingAs"] == nil)
            #expect(Self.zoneNames(try await Self.call(browser, alice, "zones/list")) == ["Lists", "_defaultZone"])
        }
    }

    @Test("what deleting a record would take: its cascade, or why it would fail, with nothing appended; and who refers to it")
    func deletionAndReferrers() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            func reference(_ target: String, _ action: String) -> String {
                #"{"value":{"recordName":"\#(target)","action":"\#(action)"},"type":"REFERENCE"}"#
            }
            func create(_ name: String, _ fields: String) -> String {
                #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Item","fields":{\#(fields)}}}"#
            }
            let operations = [
                create("list", ""), create("a", #""list":\#(reference("list", "DELETE_SELF"))"#),
                create("b", #""list":\#(reference("list", "DELETE_SELF"))"#),
                create("b1", #""up":\#(reference("b", "DELETE_SELF"))"#),
                create("tag", #""about":\#(reference("list", "NONE"))"#),
            ].joined(separator: ",")
            let made = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[\#(operations)]}"#)
            #expect(made.status == 200 && made.json["records"]?.arrayValue?.allSatisfy { $0["serverErrorCode"] == nil } == true, "\(made.json)")
            let alice = try await Self.signIn(browser, world.alice)
            let place = "container=\(APIWorld.containerName)&environment=development&database=private&zone=Lists"
            let head = world.container.store.head.sequence

            let preview = try await browser.send(.get, "/console/api/records/deletion?\(place)&record=list", headers: alice.headers)
            #expect(preview.status == 200, "\(preview.text)")
            let names = (preview.json?["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
            #expect(names == ["list", "a", "b", "b1"], "the record first, then in the order the cascade reaches them")
            #expect(preview.json?["records"]?[3]?["owner"]?.stringValue == "b")
            #expect(world.container.store.head.sequence == head, "a preview appends nothing")
            let stillThere = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"list"}]}"#)
            #expect(stillThere.json["records"]?[0]?["recordName"]?.stringValue == "list")

            let referrers = try await browser.send(.get, "/console/api/records/referrers?\(place)&record=list", headers: alice.headers)
            let pairs = (referrers.json?.arrayValue ?? []).map { "\($0["recordName"]?.stringValue ?? "")/\($0["action"]?.stringValue ?? "")" }
            #expect(pairs == ["a/DELETE_SELF", "b/DELETE_SELF", "tag/NONE"], "\(referrers.text)")

            // A validating reference from outside the cascade: the delete would fail, and says why.
            let guarding = create("guard", #""keeps":\#(reference("a", "VALIDATE"))"#)
            _ = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[\#(guarding)]}"#)
            let refused = try await browser.send(.get, "/console/api/records/deletion?\(place)&record=list", headers: alice.headers)
            #expect(refused.json?["failure"]?["serverErrorCode"]?.stringValue == "VALIDATING_REFERENCE_ERROR", "\(refused.text)")
            #expect(refused.json?["records"]?.arrayValue?.isEmpty == true)
            let unknown = try await browser.send(.get, "/console/api/records/deletion?\(place)&record=nothing", headers: alice.headers)
            #expect(unknown.json?["failure"]?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(unknown.text)")
            let unnamed = try await browser.send(.get, "/console/api/records/deletion?\(place)", headers: alice.headers)
            #expect(unnamed.status == 400)

            // Bob's preview is of his own database: alice's records do not exist there.
            let bob = try await Self.signIn(browser, world.bob)
            let bobs = try await browser.send(.get, "/console/api/records/deletion?\(place)&record=list", headers: bob.headers)
            #expect(bobs.json?["records"]?.arrayValue?.isEmpty == true && bobs.json?["failure"] != nil, "\(bobs.text)")
            let bobsReferrers = try await browser.send(.get, "/console/api/records/referrers?\(place)&record=list", headers: bob.headers)
            #expect(bobsReferrers.json?.arrayValue?.isEmpty == true, "\(bobsReferrers.text)")
        }
    }

    @Test("a zone's shares with their participants, for the owner; another user's private database holds none of them")
    func shares() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            let shared = try await world.post(
                "records/modify",
                #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"userRecordName":"\#(world.bob)"},"permission":"READ_ONLY"}]}}]}"#)
            #expect(shared.status == 200 && shared.json["records"]?[0]?["serverErrorCode"] == nil, "\(shared.json)")
            let alice = try await Self.signIn(browser, world.alice)
            let place = "container=\(APIWorld.containerName)&environment=development&database=private&zone=Lists"
            let answer = try await browser.send(.get, "/console/api/records/shares?\(place)", headers: alice.headers)
            #expect(answer.status == 200, "\(answer.text)")
            let share = answer.json?[0]
            #expect(share?["recordName"]?.stringValue == "cloudkit.zoneshare" && share?["root"] == nil)
            let participants = (share?["participants"]?.arrayValue ?? []).map {
                "\($0["userIdentity"]?["userRecordName"]?.stringValue ?? ""):\($0["permission"]?.stringValue ?? ""):"
                    + "\($0["type"]?.stringValue ?? ""):\($0["acceptanceStatus"]?.stringValue ?? "")"
            }
            #expect(participants.contains("\(world.bob):READ_ONLY:USER:INVITED"), "\(participants)")
            let bob = try await Self.signIn(browser, world.bob)
            let bobs = try await browser.send(.get, "/console/api/records/shares?\(place)", headers: bob.headers)
            #expect(bobs.status == 200 && bobs.json?.arrayValue?.isEmpty == true, "bob's own private database: \(bobs.text)")
            let sharedDatabase = try await browser.send(
                .get, "/console/api/records/shares?\(place.replacingOccurrences(of: "private", with: "shared"))", headers: bob.headers)
            #expect(sharedDatabase.status == 400)
        }
    }

    @Test("as of a past commit: operators read the data as it was, read only; a user may not; a replay past its budget says so")
    func asOf() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            func save(_ title: String) async throws {
                let saved = try await world.post(
                    "records/modify",
                    #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"r","recordType":"Item","fields":{"title":{"value":"\#(title)"}}}}]}"#)
                #expect(saved.status == 200)
            }
            try await save("before")
            let then = world.container.store.head.sequence
            try await save("after")
            let alice = try await Self.signIn(browser, world.alice)
            let lookup = #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"r"}]}"#
            func title(_ answer: LiveExchange) -> String? { answer.json?["records"]?[0]?["fields"]?["title"]?["value"]?.stringValue }

            let ready = try await browser.send(.get, "/console/api/as-of?point=\(then)", headers: alice.headers)
            #expect(ready.status == 200 && ready.json?["sequence"]?.int64Value == Int64(then), "\(ready.text)")
            #expect(ready.json?["replayed"]?.int64Value == Int64(then) && ready.json?["time"] != nil)
            let past = try await Self.call(browser, alice, "records/lookup", lookup, query: "?asOf=\(then)")
            #expect(past.status == 200 && title(past) == "before", "\(past.text)")
            #expect(past.header("X-Cumulus-As-Of") == String(then))
            #expect(title(try await Self.call(browser, alice, "records/lookup", lookup)) == "after", "now is untouched")
            // A time names the last commit at or before it.
            let time = try #require(ready.json?["time"]?.int64Value)
            let iso = ISO8601DateFormatter.string(
                from: Date(timeIntervalSince1970: Double(time) / 1000), timeZone: .gmt,
                formatOptions: [.withInternetDateTime, .withFractionalSeconds])
            let byTime = try await browser.send(.get, "/console/api/as-of?point=\(iso)", headers: alice.headers)
            #expect(byTime.json?["sequence"]?.int64Value ?? 0 >= Int64(then), "\(byTime.text)")

            let write = try await Self.call(browser, alice, "records/modify", #"{"operations":[]}"#, query: "?asOf=\(then)")
            #expect(write.status == 403 && write.text.contains("past"), "\(write.text)")
            let bob = try await Self.signIn(browser, world.bob)
            #expect(try await Self.call(browser, bob, "records/lookup", lookup, query: "?asOf=\(then)").status == 403)
            #expect(try await browser.send(.get, "/console/api/as-of?point=1", headers: bob.headers).status == 403)
            let future = try await browser.send(.get, "/console/api/as-of?point=\(then + 1000)", headers: alice.headers)
            #expect(future.status == 400 && future.text.contains("past the head"), "\(future.text)")
            let nonsense = try await browser.send(.get, "/console/api/as-of?point=yesterday", headers: alice.headers)
            #expect(nonsense.status == 400)
        }
    }

    @Test("a past state is refused, saying why, when it would replay more commits than a request may, or leave the disk too full")
    func asOfBudgets() async throws {
        var fewCommits = ConsoleTests.roomyTimeTravel
        fewCommits.commitsPerRequest = 1
        try await ConsoleTests.live(timeTravel: fewCommits) { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"More"}}}]}"#)
            let alice = try await Self.signIn(browser, world.alice)
            let refused = try await browser.send(.get, "/console/api/as-of?point=2", headers: alice.headers)
            #expect(refused.json?["serverErrorCode"]?.stringValue == "LIMIT_EXCEEDED", "\(refused.text)")
            #expect(refused.text.contains("cumulus checkpoint"))
            #expect(try await browser.send(.get, "/console/api/as-of?point=1", headers: alice.headers).status == 200)
        }
        var fullDisk = ConsoleTests.roomyTimeTravel
        fullDisk.minimumFreeBytes = Int64.max / 2
        try await ConsoleTests.live(timeTravel: fullDisk) { world, browser in
            _ = try await world.post("zones/modify", Self.createLists)
            let alice = try await Self.signIn(browser, world.alice)
            let refused = try await browser.send(.get, "/console/api/as-of?point=1", headers: alice.headers)
            #expect(refused.json?["serverErrorCode"]?.stringValue == "LIMIT_EXCEEDED", "\(refused.text)")
            #expect(refused.text.contains("free"))
            let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: world.path + "/console-as-of")) ?? []
            #expect(leftovers.isEmpty, "a refused copy leaves nothing on disk")
        }
    }

    @Test("a console database path is the same route, reached by the console's session")
    func routeMatching() {
        let query = Route.match("/console/database/1/C/development/private/records/query")
        #expect(query.route == .recordsQuery && query.viaConsole && query.container == "C" && query.database == "private")
        #expect(Route.match("/database/1/C/development/private/records/query").viaConsole == false)
        #expect(Route.match("/console/database/1/C/development/tokens/create").route == nil)
        #expect(Route.match("/console/database/1/C/development/private/nothing").route == nil)
    }

    @Test("act-as records are kept newest first, the oldest dropped past the limit")
    func actAsRecordsAreBounded() throws {
        let world = try APIWorld()
        for minute in 0..<5 {
            try world.auth.recordActAs(
                operator: world.alice, user: "user\(minute)", at: Date(timeIntervalSince1970: Double(minute) * 60), keeping: 3)
        }
        #expect(try world.auth.actAsRecords().map(\.user) == ["user4", "user3", "user2"])
        #expect(try world.auth.actAsRecords(limit: 1).map(\.user) == ["user4"])
        #expect(try world.auth.actAsRecords().first?.at == Date(timeIntervalSince1970: 240))
    }
}
