import Crypto
import CumulusModel
@testable import CumulusServer
import CumulusTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Requests that would make the server do unbounded work for one client, each sent
/// through the real server over a socket (issue 15): each is refused or bounded
/// before the work is done.
@Suite("Hostile clients")
struct HostileClientTests {
    /// `operation` in alice's private database, with her credentials, over the socket.
    static func uri(_ world: APIWorld, _ operation: String) -> String {
        "/database/1/\(APIWorld.containerName)/development/private/\(operation)?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
    }

    @Test("zones/lookup, subscriptions/lookup and changes/zone with 201 entries are LIMIT_EXCEEDED; 200 are served")
    func listsAreCapped() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        func zones(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"zoneID":{"zoneName":"z\#($0)"}}"# }.joined(separator: ",") + "]"
        }
        func subscriptions(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"subscriptionID":"s\#($0)"}"# }.joined(separator: ",") + "]"
        }
        let cases: [(String, (Int) -> String)] = [
            ("zones/lookup", { #"{"zones":\#(zones($0))}"# }),
            ("subscriptions/lookup", { #"{"subscriptions":\#(subscriptions($0))}"# }),
            ("changes/zone", { #"{"zones":\#(zones($0))}"# }),
        ]
        let requests = cases.map { (operation, body) in (Self.uri(world, operation), body(201), body(200)) }
        try await app.testLive { client in
            for (uri, over, within) in requests {
                try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: over)) { response in
                    let json = try JSONValue.parse(Data(response.body.readableBytesView))
                    #expect(json["serverErrorCode"] == "LIMIT_EXCEEDED", "\(uri)")
                    #expect(json["reason"]?.stringValue?.contains("the limit is 200") == true, "\(uri)")
                }
                try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: within)) { response in
                    #expect(response.status == .ok, "\(uri)")
                }
            }
        }
    }

    @Test("an API token opens the environment it was minted for, not the other; an unbound (older) token opens both and is counted")
    func apiTokensAreBoundToTheirEnvironment() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        let alice = world.aliceToken
        @Sendable func uri(_ environment: String, _ token: String) -> String {
            "/database/1/\(APIWorld.containerName)/\(environment)/private/zones/list?ckAPIToken=\(token)&ckWebAuthToken=\(alice)"
        }
        // A token as stored before tokens were bound: the container alone.
        let unbound = AuthStore.randomHex(32)
        try world.container.store.logEnvironment.write { txn in
            try txn.put(world.auth.table, key: [0x61] + AuthStore.hash(unbound), value: Array(APIWorld.containerName.utf8))
        }
        #expect(try world.auth.unboundAPITokenCount() == 1)
        #expect(try world.auth.scope(forAPIToken: world.productionAPIToken)?.environment == .production)
        let cases: [(String, String, HTTPResponse.Status)] = [
            ("development", world.apiToken, .ok),
            ("production", world.apiToken, .unauthorized),
            ("production", world.productionAPIToken, .ok),
            ("development", world.productionAPIToken, .unauthorized),
            ("development", unbound, .ok),
            ("production", unbound, .ok),
        ]
        try await app.testLive { client in
            for (environment, token, status) in cases {
                try await client.execute(uri: uri(environment, token), method: .get) { response in
                    #expect(response.status == status, "\(environment) with the \(token == unbound ? "unbound" : "bound") token")
                    if status == .unauthorized {
                        let json = try JSONValue.parse(Data(response.body.readableBytesView))
                        #expect(json["serverErrorCode"] == "AUTHENTICATION_FAILED")
                    }
                }
            }
        }
    }

    @Test("a signed server-to-server request is accepted once: the same request again, or with its signature's s flipped, is refused")
    func signedRequestsCannotBeReplayed() async throws {
        let world = try APIWorld()
        let key = P256.Signing.PrivateKey()
        let (keyID, _) = try world.auth.addServerKey(container: APIWorld.containerName, publicKeyPEM: key.publicKey.pemRepresentation)
        let path = "/database/1/\(APIWorld.containerName)/development/public/records/modify"
        let body = #"{"operations":[{"operationType":"create","record":{"recordName":"once","recordType":"Post"}}]}"#
        let date = ISO8601DateFormatter().string(from: Date())
        let hash = Data(SHA256.hash(data: Array(body.utf8))).base64EncodedString()
        let signature = try key.signature(for: Data("\(date):\(hash):\(path)".utf8))
        let malleated = try P256.Signing.ECDSASignature(
            rawRepresentation: SignatureReplayCacheTests.flipped(Array(signature.rawRepresentation)))
        @Sendable func headers(_ signature: P256.Signing.ECDSASignature) -> HTTPFields {
            var fields = HTTPFields()
            for (name, value) in [
                ("X-Apple-CloudKit-Request-KeyID", keyID), ("X-Apple-CloudKit-Request-ISO8601Date", date),
                ("X-Apple-CloudKit-Request-SignatureV1", signature.derRepresentation.base64EncodedString()),
            ] {
                if let field = HTTPField.Name(name) { fields[field] = value }
            }
            return fields
        }
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        try await app.testLive { client in
            try await client.execute(uri: path, method: .post, headers: headers(signature), body: ByteBuffer(string: body)) {
                #expect($0.status == .ok)
            }
            for replay in [signature, malleated] {
                try await client.execute(uri: path, method: .post, headers: headers(replay), body: ByteBuffer(string: body)) {
                    response in
                    #expect(response.status == .unauthorized)
                    let json = try JSONValue.parse(Data(response.body.readableBytesView))
                    #expect(json["serverErrorCode"] == "AUTHENTICATION_FAILED")
                    #expect(json["reason"]?.stringValue?.contains("already received") == true)
                }
            }
        }
    }

    @Test("a user holds at most 4 notification streams: the fifth is TRY_AGAIN_LATER until one ends; another user is not held back")
    func notificationStreamsArePerUserCapped() async throws {
        let world = try APIWorld()
        func request(_ token: String) -> APIRequest {
            APIRequest(
                method: "GET", path: "/database/1/\(APIWorld.containerName)/development/notifications/stream",
                query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": token])
        }
        var held = try (0..<4).map { _ in try world.api.notificationEvents(request(world.aliceToken)) }
        #expect(throws: CumulusError.self) { try world.api.notificationEvents(request(world.aliceToken)) }
        _ = try world.api.notificationEvents(request(world.bobToken))
        held.removeLast()
        var again = try world.api.notificationEvents(request(world.aliceToken)).makeAsyncIterator()
        #expect(try await again.next()?.hasPrefix(": cumulus notifications") == true)
        #expect(held.count == 3)
    }

    @Test("the stream limits are the API's settings: one per user, one in all")
    func notificationStreamLimitsAreSettings() async throws {
        let world = try APIWorld()
        var api = world.api
        api.limits.notificationStreamsPerUser = 1
        api.limits.notificationStreams = 1
        func request(_ token: String) -> APIRequest {
            APIRequest(
                method: "GET", path: "/database/1/\(APIWorld.containerName)/development/notifications/stream",
                query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": token])
        }
        let held = try api.notificationEvents(request(world.aliceToken))
        #expect(throws: CumulusError.self) { try api.notificationEvents(request(world.aliceToken)) }
        // One in all: Bob, under his own limit, is refused too.
        #expect(throws: CumulusError.self) { try api.notificationEvents(request(world.bobToken)) }
        withExtendedLifetime(held) {}
    }

    @Test("over real sockets: four open SSE streams for one user, the fifth refused with 503; a closed one frees its place")
    func notificationStreamsOverSockets() async throws {
        let world = try APIWorld()
        var api = world.api
        // A dropped connection is noticed when the stream next writes: keep-alives often.
        api.notificationHeartbeat = .milliseconds(200)
        let app = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        let path = "/database/1/\(APIWorld.containerName)/development/notifications/stream?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        try await app.testLive { client in
            let port = try #require(client.port)
            var open: [RawConnection] = []
            for _ in 0..<4 {
                let connection = try RawConnection(port: port)
                connection.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                #expect(await connection.statusLine()?.contains(" 200 ") == true)
                open.append(connection)
            }
            let refused = try RawConnection(port: port)
            refused.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(await refused.statusLine()?.contains(" 503 ") == true)
            refused.close()
            // The server learns of a closed connection when it next writes to it (a
            // keep-alive at the latest); wait for the place to come back, with a deadline.
            open.removeLast().close()
            // A bound on failing, not a measure: under the whole suite on two cores, the
            // heartbeat that finds the closed socket has come more than 20 s late.
            let deadline = ContinuousClock.now + .seconds(120)
            var admitted = false
            // One more try after the deadline: this task may wake from its sleep late.
            var lastTry = false
            while !admitted && !lastTry {
                lastTry = ContinuousClock.now >= deadline
                let next = try RawConnection(port: port)
                next.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                admitted = await next.statusLine()?.contains(" 200 ") == true
                next.close()
                if !admitted && !lastTry { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(admitted, "the closed stream's place was given back")
            for connection in open { connection.close() }
        }
    }

    @Test("changes/zone shares one response's records out over its zones: the first get theirs, the rest are told to ask again")
    func changesResponseIsBounded() async throws {
        let world = try APIWorld()
        let zoneNames = ["a", "b", "c"]
        let create = zoneNames.map { #"{"operationType":"create","zone":{"zoneID":{"zoneName":"\#($0)"}}}"# }
        #expect(try await world.post("zones/modify", #"{"operations":[\#(create.joined(separator: ","))]}"#).status == 200)
        // 700 records in each zone, 200 per request (CloudKit's limit).
        for zone in zoneNames {
            for batch in 0..<4 {
                let count = batch < 3 ? 200 : 100
                let operations = (0..<count).map {
                    #"{"operationType":"forceReplace","record":{"recordName":"r\#(batch)-\#($0)","recordType":"Item","fields":{"n":{"value":\#($0)}}}}"#
                }
                let body = #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(operations.joined(separator: ","))]}"#
                #expect(try await world.post("records/modify", body).status == 200)
            }
        }
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        let uri = Self.uri(world, "changes/zone")
        let zones = zoneNames.map { #"{"zoneID":{"zoneName":"\#($0)"}}"# }.joined(separator: ",")
        try await app.testLive { client in
            let body = #"{"resultsLimit":1000,"zones":[\#(zones)]}"#
            try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                let answers = json["zones"]?.arrayValue ?? []
                #expect(answers.count == 3)
                let counts = answers.map { $0["records"]?.arrayValue?.count }
                #expect(counts[0] == 700 && counts[1] == 300, "\(counts)")
                #expect(counts.compactMap { $0 }.reduce(0, +) <= APILimits().recordsPerResponse)
                #expect(answers[0]["moreComing"] == false)
                #expect(answers[1]["moreComing"] == true, "the second zone's page was cut to what was left")
                #expect(answers[2]["serverErrorCode"] == "LIMIT_EXCEEDED")
                #expect(answers[2]["zoneID"]?["zoneName"] == "c")
            }
        }
    }

    @Test("over real sockets, another user cannot pin a public record: VALIDATE and DELETE_SELF to it are ACCESS_DENIED, NONE leaves its tag, its creator deletes it")
    func publicRecordsCannotBePinned() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        @Sendable func uri(_ operation: String, _ userToken: String) -> String {
            "/database/1/\(APIWorld.containerName)/development/public/\(operation)?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(userToken)"
        }
        @Sendable func reply(_ name: String, _ action: String) -> String {
            #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Post","fields":{"#
                + #""inReplyTo":{"value":{"recordName":"alices","action":"\#(action)"},"type":"REFERENCE"}}}}]}"#
        }
        let lookup = #"{"records":[{"recordName":"alices"}]}"#
        try await app.testLive { client in
            let create = #"{"operations":[{"operationType":"create","record":{"recordName":"alices","recordType":"Post","fields":{"text":{"value":"hi"}}}}]}"#
            var tag: JSONValue?
            try await client.execute(uri: uri("records/modify", world.aliceToken), method: .post, body: ByteBuffer(string: create)) {
                let json = try JSONValue.parse(Data($0.body.readableBytesView))
                tag = json["records"]?[0]?["recordChangeTag"]
                #expect(tag != nil, "\(json)")
            }
            for action in ["VALIDATE", "DELETE_SELF"] {
                let body = ByteBuffer(string: reply("bobs-\(action)", action))
                try await client.execute(uri: uri("records/modify", world.bobToken), method: .post, body: body) { response in
                    let json = try JSONValue.parse(Data(response.body.readableBytesView))
                    #expect(json["records"]?[0]?["serverErrorCode"] == "ACCESS_DENIED", "\(action): \(json)")
                }
            }
            try await client.execute(
                uri: uri("records/modify", world.bobToken), method: .post, body: ByteBuffer(string: reply("bobs-none", "NONE"))
            ) { response in
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["records"]?[0]?["recordName"] == "bobs-none", "\(json)")
            }
            try await client.execute(uri: uri("records/lookup", world.aliceToken), method: .post, body: ByteBuffer(string: lookup)) {
                let json = try JSONValue.parse(Data($0.body.readableBytesView))
                #expect(json["records"]?[0]?["recordChangeTag"] == tag, "a reference Bob holds does not change Alice's record")
            }
            let delete = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"alices"}}]}"#
            try await client.execute(uri: uri("records/modify", world.aliceToken), method: .post, body: ByteBuffer(string: delete)) {
                let json = try JSONValue.parse(Data($0.body.readableBytesView))
                #expect(json["records"]?[0]?["deleted"] == true, "\(json)")
            }
        }
    }

    @Test("over real sockets, a response stops adding records at its byte budget: query pages, change pages and lookups of 100 KB records each come back whole, in parts")
    func responsesAreBoundedInBytes() async throws {
        let world = try APIWorld()
        try await world.fillBigZone(records: 30)
        var api = world.api
        api.limits.responseBytes = 512 << 10
        let app = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        let zone = #""zoneID":{"zoneName":"big"}"#
        try await app.testLive { client in
            func post(_ operation: String, _ body: String) async throws -> JSONValue {
                try await client.execute(uri: Self.uri(world, operation), method: .post, body: ByteBuffer(string: body)) {
                    try JSONValue.parse(Data($0.body.readableBytesView))
                }
            }
            // Query: pages of about five records, every record once, in order.
            var names: [String] = []
            var marker: String?
            repeat {
                let cursor = marker.map { #","continuationMarker":"\#($0)""# } ?? ""
                let page = try await post("records/query", #"{\#(zone),"query":{"recordType":"Blob","sortBy":[{"fieldName":"n"}]}\#(cursor)}"#)
                let records = page["records"]?.arrayValue ?? []
                #expect(records.count >= 1 && records.count <= 6, "\(records.count) records in one page")
                names += records.compactMap { $0["recordName"]?.stringValue }
                marker = page["continuationMarker"]?.stringValue
            } while marker != nil && names.count < 60
            #expect(names == (0..<30).map { "r\($0)" })
            // Zone changes: pages that say moreComing until every record came once.
            var changed: [String] = []
            var token: String?
            var more = true
            while more && changed.count < 60 {
                let sync = token.map { #","syncToken":"\#($0)""# } ?? ""
                let page = try await post("records/changes", #"{\#(zone)\#(sync)}"#)
                let records = page["records"]?.arrayValue ?? []
                #expect(records.count <= 6, "\(records.count) records in one page")
                changed += records.compactMap { $0["recordName"]?.stringValue }
                token = page["syncToken"]?.stringValue
                more = page["moreComing"]?.boolValue ?? false
            }
            #expect(changed.sorted() == (0..<30).map { "r\($0)" }.sorted())
            #expect(Set(changed).count == changed.count)
            // Lookup: the records that fit, then each of the rest told to ask again.
            let ids = (0..<30).map { #"{"recordName":"r\#($0)"}"# }.joined(separator: ",")
            let lookup = try await post("records/lookup", #"{\#(zone),"records":[\#(ids)]}"#)
            let items = lookup["records"]?.arrayValue ?? []
            #expect(items.count == 30)
            let found = items.filter { $0["recordName"] != nil && $0["serverErrorCode"] == nil }.count
            #expect(found >= 5 && found <= 25, "\(found) records in one lookup")
            #expect(items.dropFirst(found).allSatisfy { $0["serverErrorCode"] == "LIMIT_EXCEEDED" })
        }
    }
}
