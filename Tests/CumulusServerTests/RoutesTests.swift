import Crypto
import CumulusLog
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import Testing

@Suite("CloudKit Web Services routes")
struct RoutesTests {
    let createZone = #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#
    let saveListAndItems = #"""
        {"zoneID":{"zoneName":"Lists"},"operations":[
          {"operationType":"create","record":{"recordName":"groceries","recordType":"TodoList","fields":{"title":{"value":"Groceries"}}}},
          {"operationType":"create","record":{"recordName":"milk","recordType":"TodoItem","fields":{"title":{"value":"Milk"},"list":{"value":{"recordName":"groceries","action":"DELETE_SELF"},"type":"REFERENCE"}}}},
          {"operationType":"create","record":{"recordName":"eggs","recordType":"TodoItem","fields":{"title":{"value":"Eggs"},"list":{"value":{"recordName":"groceries","action":"DELETE_SELF"},"type":"REFERENCE"}}}}
        ]}
        """#

    @Test("a lookup's desiredKeys: the request's apply to every entry but one that names its own; query and changes take them too")
    func desiredKeysOnReads() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", createZone)
        _ = try await world.post("records/modify", saveListAndItems)
        func fieldNames(_ record: JSONValue?) -> [String] { (record?["fields"]?.objectValue.map { Array($0.keys) } ?? []).sorted() }
        let lookup = try await world.post("records/lookup", #"""
            {"zoneID":{"zoneName":"Lists"},"desiredKeys":["title"],
             "records":[{"recordName":"milk"},{"recordName":"eggs","desiredKeys":["list"]},{"recordName":"groceries","desiredKeys":[]}]}
            """#)
        #expect(lookup.status == 200)
        #expect(fieldNames(lookup.json["records"]?[0]) == ["title"])
        #expect(fieldNames(lookup.json["records"]?[1]) == ["list"])
        #expect(fieldNames(lookup.json["records"]?[2]) == [])
        #expect(lookup.json["records"]?[2]?["recordName"] == "groceries")
        let all = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"milk"}]}"#)
        #expect(fieldNames(all.json["records"]?[0]) == ["list", "title"])
        let query = try await world.post("records/query", #"""
            {"zoneID":{"zoneName":"Lists"},"desiredKeys":["list"],"query":{"recordType":"TodoItem"}}
            """#)
        #expect(query.json["records"]?.arrayValue?.map(fieldNames) == [["list"], ["list"]])
        let changes = try await world.post("records/changes", #"{"zoneID":{"zoneName":"Lists"},"desiredKeys":["title"]}"#)
        #expect(changes.json["records"]?.arrayValue?.map(fieldNames) == [["title"], ["title"], ["title"]])
    }

    @Test("the to-do session: zone, list and owned items, query by reference, cascade, changes")
    func todoSession() async throws {
        let world = try APIWorld()
        var answer = try await world.post("zones/modify", createZone)
        #expect(answer.status == 200)
        #expect(answer.json["zones"]?[0]?["zoneID"]?["zoneName"] == "Lists")
        answer = try await world.post("records/modify", saveListAndItems)
        #expect(answer.status == 200)
        #expect(answer.json["records"]?[2]?["recordChangeTag"]?.stringValue != nil)
        answer = try await world.post("records/query", #"""
            {"zoneID":{"zoneName":"Lists"},"query":{"recordType":"TodoItem",
             "filterBy":[{"comparator":"EQUALS","fieldName":"list","fieldValue":{"value":{"recordName":"groceries"},"type":"REFERENCE"}}],
             "sortBy":[{"fieldName":"title"}]}}
            """#)
        #expect(answer.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["eggs", "milk"])
        answer = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"forceDelete","record":{"recordName":"groceries"}}]}"#)
        #expect(answer.json["records"]?[0]?["deleted"] == true)
        answer = try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"milk"}]}"#)
        #expect(answer.status == 200)
        #expect(answer.json["records"]?[0]?["serverErrorCode"] == "NOT_FOUND")
        answer = try await world.post("records/changes", #"{"zoneID":{"zoneName":"Lists"}}"#)
        let deleted = answer.json["records"]?.arrayValue?.filter { $0["deleted"] == true }.compactMap { $0["recordName"]?.stringValue }
        #expect(Set(deleted ?? []) == ["groceries", "milk", "eggs"])
        #expect(answer.json["syncToken"]?.stringValue != nil && answer.json["moreComing"] == false)
    }

    @Test("every operation type, with CloudKit's per-item error codes")
    func operationTypes() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", createZone)
        let created = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"a":{"value":1},"b":{"value":"x"}}}}]}"#)
        let tag = created.json["records"]?[0]?["recordChangeTag"]?.stringValue ?? ""
        func op(_ type: String, _ record: String) async throws -> JSONValue? {
            try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"\#(type)","record":\#(record)}]}"#).json["records"]?[0]
        }
        #expect(try await op("create", #"{"recordName":"n","recordType":"Note"}"#)?["serverErrorCode"] == "EXISTS")
        #expect(try await op("update", #"{"recordName":"n","recordType":"Note","recordChangeTag":"stale","fields":{"a":{"value":2}}}"#)?["serverErrorCode"] == "CONFLICT")
        let updated = try await op("update", #"{"recordName":"n","recordType":"Note","recordChangeTag":"\#(tag)","fields":{"a":{"value":2}}}"#)
        #expect(updated?["fields"]?["a"]?["value"] == 2 && updated?["fields"]?["b"]?["value"] == "x")
        let newTag = updated?["recordChangeTag"]?.stringValue ?? ""
        let replaced = try await op("replace", #"{"recordName":"n","recordType":"Note","recordChangeTag":"\#(newTag)","fields":{"a":{"value":3}}}"#)
        #expect(replaced?["fields"]?["b"] == nil && replaced?["fields"]?["a"]?["value"] == 3)
        #expect(try await op("forceUpdate", #"{"recordName":"fresh","recordType":"Note","fields":{"a":{"value":1}}}"#)?["recordName"] == "fresh")
        #expect(try await op("forceReplace", #"{"recordName":"n","recordType":"Note","fields":{}}"#)?["fields"] == .object([:]))
        #expect(try await op("delete", #"{"recordName":"n","recordChangeTag":"stale"}"#)?["serverErrorCode"] == "CONFLICT")
        #expect(try await op("forceDelete", #"{"recordName":"n"}"#)?["deleted"] == true)
        #expect(try await op("forceDelete", #"{"recordName":"n"}"#)?["serverErrorCode"] == "NOT_FOUND")
        let missingZone = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Nope"},"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"T"}}]}"#)
        #expect(missingZone.json["records"]?[0]?["serverErrorCode"] == "ZONE_NOT_FOUND")
        let atomic = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"ok","recordType":"T"}},{"operationType":"create","record":{"recordName":"_bad","recordType":"T"}}]}"#)
        #expect(atomic.json["records"]?[0]?["serverErrorCode"] == "ATOMIC_ERROR")
        #expect(atomic.json["records"]?[1]?["serverErrorCode"] == "BAD_REQUEST")
    }

    @Test("delete without a recordChangeTag deletes unconditionally; with one, a stale tag conflicts and the current one deletes")
    func deleteChangeTag() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", createZone)
        func op(_ type: String, _ record: String) async throws -> JSONValue? {
            try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"\#(type)","record":\#(record)}]}"#).json["records"]?[0]
        }
        func lookup(_ name: String) async throws -> JSONValue? {
            try await world.post("records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"\#(name)"}]}"#).json["records"]?[0]
        }
        // As MistKit sends it: no tag.
        #expect(try await op("create", #"{"recordName":"untagged","recordType":"Note"}"#)?["recordChangeTag"]?.stringValue != nil)
        #expect(try await op("delete", #"{"recordName":"untagged"}"#)?["deleted"] == true)
        #expect(try await lookup("untagged")?["serverErrorCode"] == "NOT_FOUND")
        #expect(try await op("delete", #"{"recordName":"untagged"}"#)?["serverErrorCode"] == "NOT_FOUND")
        // With a tag the delete is checked: the tag before an update is stale.
        let created = try await op("create", #"{"recordName":"tagged","recordType":"Note","fields":{"a":{"value":1}}}"#)
        let staleTag = try #require(created?["recordChangeTag"]?.stringValue)
        let updated = try await op("forceUpdate", #"{"recordName":"tagged","recordType":"Note","fields":{"a":{"value":2}}}"#)
        let tag = try #require(updated?["recordChangeTag"]?.stringValue)
        #expect(tag != staleTag)
        #expect(try await op("delete", #"{"recordName":"tagged","recordChangeTag":"\#(staleTag)"}"#)?["serverErrorCode"] == "CONFLICT")
        let kept = try await lookup("tagged")
        #expect(kept?["recordChangeTag"]?.stringValue == tag && kept?["fields"]?["a"]?["value"] == 2)
        #expect(try await op("delete", #"{"recordName":"tagged","recordChangeTag":"\#(tag)"}"#)?["deleted"] == true)
        #expect(try await lookup("tagged")?["serverErrorCode"] == "NOT_FOUND")
    }

    @Test("request-level errors: bad JSON, unknown comparator, too many operations, credentials")
    func requestErrors() async throws {
        let world = try APIWorld()
        var answer = try await world.post("records/modify", "{not json")
        #expect(answer.status == 400 && answer.json["serverErrorCode"] == "BAD_REQUEST")
        answer = try await world.post("records/query", #"{"query":{"recordType":"T","filterBy":[{"comparator":"SOUNDS_LIKE","fieldName":"a","fieldValue":{"value":1}}]}}"#)
        #expect(answer.status == 400)
        #expect(answer.json["reason"]?.stringValue?.contains("SOUNDS_LIKE") == true)
        let many = (0..<201).map { #"{"operationType":"create","record":{"recordName":"r\#($0)","recordType":"T"}}"# }.joined(separator: ",")
        answer = try await world.post("records/modify", #"{"operations":[\#(many)]}"#)
        #expect(answer.status == 400 && answer.json["serverErrorCode"] == "LIMIT_EXCEEDED")
        answer = try await world.post("zones/list", "", token: .some(nil))
        #expect(answer.status == 421 && answer.json["serverErrorCode"] == "AUTHENTICATION_REQUIRED")
        answer = try await world.post("zones/list", "", token: "not-a-token")
        #expect(answer.status == 401 && answer.json["serverErrorCode"] == "AUTHENTICATION_FAILED")
        answer = try await world.post("zones/list", "", apiToken: String(repeating: "0", count: 64))
        #expect(answer.status == 401)
        // No web token: the public database reads, but does not write.
        answer = try await world.post("records/query", #"{"query":{"recordType":"T"}}"#, database: "public", token: .some(nil))
        #expect(answer.status == 200)
        answer = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"p","recordType":"T"}}]}"#, database: "public", token: .some(nil))
        #expect(answer.status == 421)
    }

    @Test("public records are changed only by their creator: ACCESS_DENIED for another user")
    func wrongUser() async throws {
        let world = try APIWorld()
        let saved = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"post","recordType":"Post","fields":{"t":{"value":"hi"}}}}]}"#, database: "public")
        #expect(saved.json["records"]?[0]?["recordName"] == "post")
        let edit = try await world.post("records/modify", #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"post","recordType":"Post","fields":{"t":{"value":"x"}}}}]}"#, database: "public", token: world.bobToken)
        #expect(edit.json["records"]?[0]?["serverErrorCode"] == "ACCESS_DENIED")
        // Bob's private database is his own: Alice's zones are not in it.
        _ = try await world.post("zones/modify", createZone)
        let bobs = try await world.post("zones/list", "", token: world.bobToken)
        #expect(bobs.json["zones"]?.arrayValue?.count == 1)
    }

    @Test("zones: list, lookup, changes with metaSyncToken; database and zone changes; users/current")
    func zonesAndChanges() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", createZone)
        _ = try await world.post("records/modify", saveListAndItems)
        var answer = try await world.post("zones/lookup", #"{"zones":[{"zoneName":"Lists"},{"zoneName":"Nope"}]}"#)
        #expect(answer.json["zones"]?[0]?["atomic"] == true)
        #expect(answer.json["zones"]?[1]?["serverErrorCode"] == "ZONE_NOT_FOUND")
        answer = try await world.post("zones/changes", "{}")
        let meta = answer.json["metaSyncToken"]?.stringValue ?? ""
        #expect(answer.json["syncToken"]?.stringValue == meta && !meta.isEmpty)
        answer = try await world.post("changes/database", #"{"syncToken":"\#(meta)"}"#)
        #expect(answer.json["zones"]?.arrayValue?.isEmpty == true)
        answer = try await world.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"},"resultsLimit":2}]}"#)
        #expect(answer.json["zones"]?[0]?["records"]?.arrayValue?.count == 2)
        #expect(answer.json["zones"]?[0]?["moreComing"] == true)
        answer = try await world.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"},"syncToken":"AAAA"}]}"#)
        #expect(answer.json["zones"]?[0]?["serverErrorCode"] == "CHANGE_TOKEN_EXPIRED")
        // Many zones sharing the request's desiredKeys and resultsLimit: the defaults are
        // read from the body once, not once a zone (each build counts against the
        // body's memory, 64 KiB for a body this small).
        let keys = (0..<50).map { #""field\#($0)""# }.joined(separator: ",")
        let zones = (0..<60).map { index -> String in
            let name = index == 0 ? "Lists" : "Nope\(index)"
            return #"{"zoneID":{"zoneName":"\#(name)"}}"#
        }.joined(separator: ",")
        answer = try await world.post("changes/zone", #"{"resultsLimit":2,"desiredKeys":[\#(keys)],"zones":[\#(zones)]}"#)
        #expect(answer.status == 200, "\(answer.json)")
        #expect(answer.json["zones"]?.arrayValue?.count == 60)
        #expect(answer.json["zones"]?[0]?["records"]?.arrayValue?.count == 2)
        #expect(answer.json["zones"]?[1]?["serverErrorCode"] == "ZONE_NOT_FOUND")
        answer = try await world.post("users/current", "")
        #expect(answer.json["userRecordName"]?.stringValue == world.alice)
        answer = try await world.post("users/caller", "", token: world.bobToken)
        #expect(answer.json["userRecordName"]?.stringValue == world.bob)
    }

    @Test("over HTTP through Hummingbird: JSON in, JSON out, statuses")
    func overHTTP() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/database/1/\(APIWorld.containerName)/development/private/zones/list?\(query)", method: .get
            ) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["zones"]?[0]?["zoneID"]?["zoneName"] == "_defaultZone")
            }
            try await client.execute(uri: "/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }
}

@Suite("Subscription routes")
struct SubscriptionRoutesTests {
    @Test("create, list, lookup, delete; a bad subscription gets its own error")
    func subscriptionLifecycle() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
        var answer = try await world.post("subscriptions/modify", #"""
            {"operations":[
              {"operationType":"create","subscription":{"subscriptionID":"new-items","subscriptionType":"query",
                "query":{"recordType":"TodoItem","filterBy":[{"comparator":"EQUALS","fieldName":"done","fieldValue":{"value":0}}]},
                "firesOn":["create","delete"]}},
              {"operationType":"create","subscription":{"subscriptionID":"lists","subscriptionType":"zone","zoneID":{"zoneName":"Lists"}}},
              {"operationType":"create","subscription":{"subscriptionID":"bad","subscriptionType":"sometimes"}}]}
            """#)
        #expect(answer.status == 200)
        #expect(answer.json["subscriptions"]?[0]?["firesOn"] == ["create", "delete"])
        #expect(answer.json["subscriptions"]?[1]?["subscriptionType"] == "zone")
        #expect(answer.json["subscriptions"]?[2]?["serverErrorCode"] == "BAD_REQUEST")
        answer = try await world.post("subscriptions/list", "")
        #expect(Set(answer.json["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } ?? []) == ["new-items", "lists"])
        answer = try await world.post("subscriptions/lookup", #"{"subscriptions":[{"subscriptionID":"lists"},{"subscriptionID":"nope"}]}"#)
        #expect(answer.json["subscriptions"]?[0]?["zoneID"]?["zoneName"] == "Lists")
        #expect(answer.json["subscriptions"]?[1]?["serverErrorCode"] == "NOT_FOUND")
        answer = try await world.post("subscriptions/modify", #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"lists"}}]}"#)
        #expect(answer.json["subscriptions"]?[0]?["deleted"] == true)
        answer = try await world.post("subscriptions/list", "")
        #expect(answer.json["subscriptions"]?.arrayValue?.count == 1)
    }
}

@Suite("Live notifications over HTTP")
struct NotificationRoutesTests {
    func request(_ world: APIWorld, _ path: String, query: [String: String] = [:], headers: [String: String] = [:], body: String = "")
        -> APIRequest
    {
        var all = ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken]
        all.merge(query) { $1 }
        return APIRequest(
            method: path.hasSuffix("create") ? "POST" : "GET",
            path: "/database/1/\(APIWorld.containerName)/development/\(path)", query: all, headers: headers,
            body: Array(body.utf8))
    }

    @Test("tokens/create gives a long-poll URL; the poll waits for, then returns, notifications in order")
    func longPoll() async throws {
        let world = try APIWorld()
        _ = try await world.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"db","subscriptionType":"database"}}]}"#)
        let created = await world.api.handle(request(world, "tokens/create", body: #"{"apnsEnvironment":"development"}"#))
        let json = try JSONValue.parse(Data(created.bodyBytes()))
        #expect(json["webcourierURL"]?.stringValue?.contains("/device/1/\(APIWorld.containerName)/development/webcourier/") == true)
        let empty = await world.api.handle(request(world, "notifications/poll", query: ["timeout": "0"]))
        #expect(try JSONValue.parse(Data(empty.bodyBytes()))["notifications"] == [])
        let waiting = Task { await world.api.handle(request(world, "notifications/poll", query: ["timeout": "10"])) }
        try await Task.sleep(for: .milliseconds(100))
        _ = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T"}}]}"#)
        let answer = try JSONValue.parse(Data(await waiting.value.bodyBytes()))
        #expect(answer["notifications"]?[0]?["subscriptionID"] == "db")
        #expect(answer["notifications"]?[0]?["databaseChangeToken"]?.stringValue != nil)
        // Resuming from the returned token gives only what came after.
        _ = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"b","recordType":"T"}}]}"#)
        let next = await world.api.handle(request(world, "notifications/poll", query: ["since": answer["token"]?.stringValue ?? "", "timeout": "0"]))
        let nextJSON = try JSONValue.parse(Data(next.bodyBytes()))
        #expect(nextJSON["notifications"]?.arrayValue?.count == 1)
        #expect(nextJSON["notifications"]?[0]?["notificationID"] == 2)
    }

    @Test("the SSE stream resumes after Last-Event-ID and refuses callers without a user")
    func serverSentEvents() async throws {
        let world = try APIWorld()
        _ = try await world.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"db","subscriptionType":"database"}}]}"#)
        for name in ["a", "b", "c"] {
            _ = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"T"}}]}"#)
        }
        var ids: [String] = []
        var events = try world.api.notificationEvents(request(world, "notifications/stream")).makeAsyncIterator()
        while ids.count < 3, let event = try await events.next() {
            if let line = event.split(separator: "\n").first(where: { $0.hasPrefix("id: ") }) { ids.append(String(line.dropFirst(4))) }
        }
        #expect(ids.count == 3)
        var resumed = try world.api.notificationEvents(request(world, "notifications/stream", headers: ["last-event-id": ids[0]])).makeAsyncIterator()
        var seen: [String] = []
        while seen.count < 2, let event = try await resumed.next() {
            if let line = event.split(separator: "\n").first(where: { $0.hasPrefix("id: ") }) { seen.append(String(line.dropFirst(4))) }
        }
        #expect(seen == Array(ids.dropFirst()))
        var anonymous = request(world, "notifications/stream")
        anonymous.query["ckWebAuthToken"] = nil
        #expect(throws: CumulusError.self) { try world.api.notificationEvents(anonymous) }
    }
}

@Suite("Operations endpoints")
struct OperationsTests {
    @Test("/healthz answers; /metrics counts requests by route and status, commits, group sizes, the writer's CPU and the views' lag")
    func metrics() async throws {
        let world = try APIWorld()
        let metrics = ServerMetrics()
        let api = world.operatorAPI(metrics: metrics)
        let operator_ = ["authorization": "Bearer m3trics"]
        let health = await api.handle(APIRequest(method: "GET", path: "/healthz", headers: operator_))
        #expect(health.status == 200)
        #expect(health.json["logHead"] != nil && health.json["epoch"] != nil && health.json["role"] != nil)
        let base = "/database/1/\(APIWorld.containerName)/development/private"
        let query = ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken]
        _ = await api.handle(APIRequest(method: "GET", path: base + "/zones/list", query: query))
        _ = await api.handle(APIRequest(method: "POST", path: base + "/records/modify", query: query, body: Array("{".utf8)))
        metrics.recordGroup(
            LogWriter.GroupReport(commits: 3, bytes: 900, append: .milliseconds(1), commit: .milliseconds(2), cpu: .milliseconds(5)))
        let text = await api.handle(APIRequest(method: "GET", path: "/metrics", headers: operator_)).text ?? ""
        #expect(text.contains(#"cumulus_requests_total{route="zones/list",status="200"} 1"#))
        #expect(text.contains(#"cumulus_requests_total{route="records/modify",status="400"} 1"#))
        #expect(text.contains("cumulus_commits_total 3"))
        #expect(text.contains("cumulus_commit_seconds_bucket"))
        #expect(text.contains("cumulus_writer_cpu_seconds_total 0.005"), "\(text)")
        #expect(text.contains(#"cumulus_map_used_bytes{environment="log"}"#))
        #expect(text.contains(#"cumulus_map_used_bytes{environment="views"}"#))
        // The views are level with the log once the writer answers: none behind.
        #expect(text.contains("cumulus_views_behind_commits 0"), "\(text)")
        #expect(text.contains("cumulus_views_unsynced_commits"))
        #expect(text.contains("cumulus_views_syncs_total"))
        #expect(text.contains("cumulus_views_snapshot_sequence 0"), "no snapshot before retention takes one")
    }

    @Test("without the metrics token /healthz says only that it is alive and /metrics is refused; with no token set /metrics is not served")
    func detailNeedsTheToken() async throws {
        let world = try APIWorld()
        let api = world.operatorAPI(metrics: ServerMetrics())
        for headers in [[:], ["authorization": "Bearer wrong"], ["authorization": "m3trics"], ["authorization": "Bearer m3trics "]] {
            let health = await api.handle(APIRequest(method: "GET", path: "/healthz", headers: headers))
            #expect(health.status == 200)
            #expect(health.json == ["status": "ok"], "\(headers)")
            let metrics = await api.handle(APIRequest(method: "GET", path: "/metrics", headers: headers))
            #expect(metrics.status == 401, "\(headers)")
            #expect(metrics.text == nil)
        }
        let open = world.operatorAPI(metrics: ServerMetrics(), metricsToken: nil)
        let metrics = await open.handle(APIRequest(method: "GET", path: "/metrics", headers: ["authorization": "Bearer anything"]))
        #expect(metrics.status == 404)
        #expect(metrics.json["reason"]?.stringValue?.contains("--metrics-token-file") == true)
        #expect(await open.handle(APIRequest(method: "GET", path: "/healthz")).json == ["status": "ok"])
    }
}

@Suite("Metrics labels")
struct MetricsLabelTests {
    @Test("random paths, unauthenticated, over a real socket, add one label to /metrics, not one per path")
    func randomPathsDoNotGrowMetrics() async throws {
        let world = try APIWorld()
        let metrics = ServerMetrics()
        let api = world.operatorAPI(metrics: metrics)
        let app = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        var random = SystemRandomNumberGenerator()
        func word() -> String { String((0..<8).map { _ in "abcdefghij".randomElement(using: &random) ?? "a" }) }
        let paths = (0..<300).map { index in
            switch index % 4 {
            case 0: "/\(word())"
            case 1: "/database/1/\(word())/development/private/\(word())/\(word())"
            case 2: "/database/1/\(APIWorld.containerName)/development/private/records/\(word())"
            default: "/database/1/\(word())/\(word())/\(word())/\(word())/\(word())/\(word())"
            }
        }
        try await app.testLive { client in
            for path in paths {
                try await client.execute(uri: path, method: .post) { response in
                    #expect(response.status.code >= 400, "\(path)")
                }
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .unauthorized, "without the metrics token")
            }
            try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer m3trics"]) { response in
                let text = String(buffer: response.body)
                let labels = Set(text.split(separator: "\n").filter { $0.hasPrefix("cumulus_requests_total{") }.compactMap {
                    $0.split(separator: "\"").dropFirst().first.map(String.init)
                })
                // The refused /metrics request above is counted under its own route.
                #expect(labels == ["unmatched", "metrics"], "\(labels)")
            }
        }
    }

    @Test("every route of the table is served by the method it lists, and the labels come from the table alone")
    func everyLabelIsARoute() async throws {
        let world = try APIWorld()
        let base = "/database/1/\(APIWorld.containerName)/development"
        let query = ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken]
        var databaseRoutes = 0
        for route in Route.allCases {
            guard case .database(let operation) = route.place else { continue }
            databaseRoutes += 1
            #expect(Route.label(of: base + "/private/" + operation) == operation)
            for method in ["GET", "POST"] {
                let answer = await world.api.handle(APIRequest(method: method, path: base + "/private/" + operation, query: query))
                let refused = answer.json["reason"]?.stringValue?.hasPrefix("no endpoint") == true
                #expect(refused == !route.takes(method), "\(method) \(operation): \(answer.json)")
            }
        }
        #expect(databaseRoutes == 21)
        for route in Route.allCases {
            guard case .environment(let operation) = route.place else { continue }
            #expect(Route.label(of: base + "/" + operation) == operation)
            #expect(Route.match(base + "/" + operation).route == route)
        }
        #expect(Route.label(of: "/healthz") == "healthz")
        #expect(Route.label(of: "/device/1/c/development/webcourier/T") == "webcourier")
        #expect(Route.match("/device/1/c/development/tokens/create").route == .deviceTokensCreate)
        #expect(Route.label(of: "/assets/upload/T") == "assets/upload-file")
        #expect(Route.match("/replication/hello").route == .replication)
        #expect(Route.label(of: "/database/1/c/development/private/records/modifyx") == Route.unmatchedLabel)
        #expect(Route.label(of: "/database/2/c/development/private/records/modify") == Route.unmatchedLabel)
        #expect(Route.label(of: "/database/1/c/development/private/tokens/create") == Route.unmatchedLabel)
    }
}

@Suite("Server-to-server signatures")
struct ServerSignatureTests {
    func signed(_ world: APIWorld, key: P256.Signing.PrivateKey, keyID: String, database: String = "public",
                body: String, date: Date = Date(), tamper: Bool = false) -> APIRequest {
        let path = "/database/1/\(APIWorld.containerName)/development/\(database)/records/modify"
        let formatter = ISO8601DateFormatter()
        let dateText = formatter.string(from: date)
        let hash = Data(SHA256.hash(data: Array(body.utf8))).base64EncodedString()
        let signature = (try? key.signature(for: Data("\(dateText):\(hash):\(path)".utf8)))?.derRepresentation ?? Data()
        return APIRequest(
            method: "POST", path: path,
            headers: [
                "x-apple-cloudkit-request-keyid": keyID, "x-apple-cloudkit-request-iso8601date": dateText,
                "x-apple-cloudkit-request-signaturev1": signature.base64EncodedString(),
            ],
            body: Array((tamper ? body + " " : body).utf8))
    }

    @Test("a signed request writes the public database; stale, tampered, unknown or private-database requests are refused")
    func signatures() async throws {
        let world = try APIWorld()
        let key = P256.Signing.PrivateKey()
        let (keyID, user) = try world.auth.addServerKey(container: APIWorld.containerName, publicKeyPEM: key.publicKey.pemRepresentation)
        let body = #"{"operations":[{"operationType":"create","record":{"recordName":"s2s","recordType":"Post"}}]}"#
        var answer = await world.api.handle(signed(world, key: key, keyID: keyID, body: body))
        var json = try JSONValue.parse(Data(answer.bodyBytes()))
        #expect(answer.status == 200)
        #expect(json["records"]?[0]?["created"]?["userRecordName"]?.stringValue == user)
        answer = await world.api.handle(signed(world, key: key, keyID: keyID, body: body, date: Date().addingTimeInterval(-660)))
        json = try JSONValue.parse(Data(answer.bodyBytes()))
        #expect(answer.status == 401 && json["reason"]?.stringValue?.contains("10 minutes") == true)
        answer = await world.api.handle(signed(world, key: key, keyID: keyID, body: body, tamper: true))
        #expect(answer.status == 401)
        answer = await world.api.handle(signed(world, key: P256.Signing.PrivateKey(), keyID: keyID, body: body))
        #expect(answer.status == 401)
        answer = await world.api.handle(signed(world, key: key, keyID: "nope", body: body))
        #expect(answer.status == 401)
        answer = await world.api.handle(signed(world, key: key, keyID: keyID, database: "private", body: body))
        #expect(answer.status == 403)
    }
}

@Suite("Request IDs and limits")
struct RequestLimitsTests {
    @Test("the request ID lands in the commit and in error bodies; deep or huge bodies are refused cleanly")
    func requestIDs() async throws {
        let world = try APIWorld()
        let response = await world.api.handle(APIRequest(
            method: "POST", path: "/database/1/\(APIWorld.containerName)/development/private/records/modify",
            query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken],
            headers: ["x-request-id": "req-42"],
            body: Array(#"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T"}}]}"#.utf8)))
        #expect(response.status == 200)
        #expect(try world.container.store.read(world.container.store.head.sequence)?.requestID == "req-42")
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        var answer = try await world.post("records/modify", deep)
        #expect(answer.status == 400)
        #expect(answer.json["uuid"]?.stringValue != nil)
        let huge = #"{"operations":[],"pad":""# + String(repeating: "x", count: CloudKitAPI.maxBodyBytes) + #""}"#
        answer = try await world.post("records/modify", huge)
        #expect(answer.status == 400 && answer.json["serverErrorCode"] == "LIMIT_EXCEEDED")
    }
}
