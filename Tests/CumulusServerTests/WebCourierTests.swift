import CumulusEngine
import CumulusModel
@testable import CumulusServer
import CumulusTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// Notifications for web clients (issue 41, item 2), spoken as CloudKit JS speaks
/// (`Docs/HTTP-API.md`, "Notifications for web clients") through a live socket:
/// `tokens/create` and `tokens/register` under
/// `/device/1/…` and `/database/1/…`, and the `webcourierURL` they answer, GET exactly
/// as given with no credentials, one notification in CloudKit's push shape per answer.
@Suite("Webcourier over HTTP")
struct WebCourierTests {
    static let publicURL = "https://cumulus.example"
    static let container = APIWorld.containerName

    /// A client's view of one live server: its calls as CloudKit JS makes them.
    struct Client {
        let client: LiveClient
        let apiToken: String

        /// POSTs `body` as `text/plain` (what CloudKit JS sends) with CloudKit JS's
        /// query parameters, to `path` under the container's development environment.
        func post(_ module: String, _ path: String, _ body: String, token: String) async throws -> (Int, JSONValue) {
            let query = "ckjsBuildVersion=2611&ckjsVersion=2.6.1&clientId=web-1&ckAPIToken=\(apiToken)&ckWebAuthToken=\(token)"
            return try await client.execute(
                uri: "/\(module)/1/\(WebCourierTests.container)/development/\(path)?\(query)", method: .post,
                headers: [.contentType: "text/plain"], body: ByteBuffer(string: body)
            ) { response in
                (Int(response.status.code), try JSONValue.parse(Data(response.body.readableBytesView)))
            }
        }

        /// A `webcourierURL` for `token`'s user: `tokens/create` through the device module.
        func webcourierURL(token: String) async throws -> String {
            let (status, json) = try await post(
                "device", "tokens/create", #"{"apnsEnvironment":"development","clientId":"web-1"}"#, token: token)
            #expect(status == 200, "\(json)")
            return try #require(json["webcourierURL"]?.stringValue)
        }

        /// A GET of `url` exactly as given (its path on this server), as CloudKit JS
        /// does: the status and the JSON body.
        func get(_ url: String) async throws -> (Int, JSONValue) {
            let path = try #require(url.hasPrefix(WebCourierTests.publicURL) ? String(url.dropFirst(WebCourierTests.publicURL.count)) : nil)
            return try await client.execute(uri: path, method: .get) { response in
                (Int(response.status.code), try JSONValue.parse(Data(response.body.readableBytesView)))
            }
        }
    }

    /// Serves `world`'s container with the public URL set and `wait` for a GET.
    static func serving(
        _ world: APIWorld, wait: Duration = .milliseconds(300), configure: (inout CloudKitAPI) -> Void = { _ in },
        _ body: @escaping @Sendable (Client) async throws -> Void
    ) async throws {
        var api = world.operatorAPI(metrics: ServerMetrics())
        api.publicURL = publicURL
        api.limits.webCourierWait = wait
        configure(&api)
        let app = CumulusHTTPServer.application(api: api, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(Client(client: client, apiToken: world.apiToken)) }
    }

    static func subscribe(_ world: APIWorld) async throws {
        #expect(try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#).status == 200)
        let subscribed = try await world.post("subscriptions/modify", #"""
            {"operations":[
              {"operationType":"create","subscription":{"subscriptionID":"z","subscriptionType":"zone","zoneID":{"zoneName":"Lists"}}},
              {"operationType":"create","subscription":{"subscriptionID":"q","subscriptionType":"query","zoneID":{"zoneName":"Lists"},
                "query":{"recordType":"Task"},"firesOn":["create","update","delete"]}}]}
            """#)
        #expect(subscribed.json["subscriptions"]?.arrayValue?.allSatisfy { $0["serverErrorCode"] == nil } == true, "\(subscribed.json)")
    }

    @Test("tokens/create and tokens/register answer an absolute webcourierURL; each GET answers one notification in the push shape, null when none comes")
    func webcourierAnswersOneNotificationPerGet() async throws {
        let world = try APIWorld()
        try await Self.subscribe(world)
        try await Self.serving(world) { client in
            let url = try await client.webcourierURL(token: world.aliceToken)
            #expect(url.hasPrefix("\(Self.publicURL)/device/1/\(Self.container)/development/webcourier/"), "\(url)")
            let (status, registered) = try await client.post(
                "database", "tokens/register", #"{"apnsEnvironment":"development","apnsToken":"my-device-1"}"#,
                token: world.aliceToken)
            #expect(status == 200 && registered["apnsToken"] == "my-device-1", "\(registered)")
            #expect(registered["apnsEnvironment"] == "development")
            #expect(registered["webcourierURL"]?.stringValue?.hasPrefix(Self.publicURL) == true)

            // Nothing yet: JSON null once the wait is over.
            let idle = try await client.get(url)
            #expect(idle.0 == 200 && idle.1 == .null, "\(idle)")

            _ = try await world.post("records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"t1","recordType":"Task"}}]}"#)
            var payloads: [JSONValue] = []
            for _ in 0..<2 {
                let (code, json) = try await client.get(url)
                #expect(code == 200, "\(json)")
                payloads.append(json)
            }
            let zone = try #require(payloads.first(where: { $0["ck"]?["fet"] != nil }), "\(payloads)")
            #expect(zone["ck"]?["fet"]?["zid"] == "Lists")
            #expect(zone["ck"]?["fet"]?["zoid"]?.stringValue == world.alice)
            #expect(zone["ck"]?["fet"]?["sid"] == "z")
            #expect(zone["ck"]?["cid"]?.stringValue == Self.container)
            let query = try #require(payloads.first(where: { $0["ck"]?["qry"] != nil }), "\(payloads)")
            #expect(query["ck"]?["qry"]?["rid"] == "t1")
            #expect(query["ck"]?["qry"]?["fo"] == 1)
            #expect(query["ck"]?["qry"]?["sid"] == "q")
            #expect(query["ck"]?["qry"]?["dbs"] == 2)
            #expect(query["ck"]?["nid"] != zone["ck"]?["nid"])
            // Both delivered: the next GET waits and answers null.
            #expect(try await client.get(url).1 == .null)

            // The URL is the credential: altered, or under another environment, it opens nothing.
            let last = url.index(before: url.endIndex)
            let altered = url.replacingCharacters(in: last...last, with: url.hasSuffix("A") ? "B" : "A")
            let refused = try await client.get(altered)
            #expect(refused.0 == 401 && refused.1["serverErrorCode"] == "AUTHENTICATION_FAILED", "\(refused)")
            let elsewhere = try await client.get(url.replacingOccurrences(of: "/development/", with: "/production/"))
            #expect(elsewhere.0 == 401, "\(elsewhere)")
        }
    }

    @Test("a browser app may read its webcourierURL's answers (CORS) when its API token allowed its origin at tokens/create; another origin may not")
    func webcourierAnswersItsAppAcrossOrigins() async throws {
        let world = try APIWorld()
        let app = "https://app.example.com"
        let token = try world.auth.createAPIToken(container: Self.container, environment: .development, origins: [app])
        try await Self.serving(world) { client in
            let query = "ckAPIToken=\(token)&ckWebAuthToken=\(world.aliceToken)"
            let created = try await LiveExchange.send(
                client.client, .post, "/device/1/\(Self.container)/development/tokens/create?\(query)",
                headers: ["Origin": app, "Content-Type": "text/plain"], body: "{}")
            #expect(created.header("Access-Control-Allow-Origin") == app, "tokens/create is the API token's to allow")
            let url = try #require(created.json?["webcourierURL"]?.stringValue)
            let path = String(url.dropFirst(Self.publicURL.count))
            let fromApp = try await LiveExchange.send(client.client, .get, path, headers: ["Origin": app])
            #expect(fromApp.status == .ok && fromApp.header("Access-Control-Allow-Origin") == app)
            let fromElsewhere = try await LiveExchange.send(client.client, .get, path, headers: ["Origin": "https://evil.example.net"])
            #expect(fromElsewhere.status == .ok && !fromElsewhere.hasCrossOriginHeaders)
            // A URL asked for by a page whose origin the token did not allow opens to no page.
            let plain = try await client.webcourierURL(token: world.aliceToken)
            let unlisted = try await LiveExchange.send(
                client.client, .get, String(plain.dropFirst(Self.publicURL.count)), headers: ["Origin": app])
            #expect(!unlisted.hasCrossOriginHeaders)
        }
    }

    @Test("a webcourierURL stops working when the sign-in it was made with is revoked")
    func webcourierDiesWithTheSignIn() async throws {
        let world = try APIWorld()
        try await Self.serving(world) { client in
            let url = try await client.webcourierURL(token: world.aliceToken)
            #expect(try await client.get(url).0 == 200)
            #expect(try world.auth.revokeWebAuthToken(world.aliceToken))
            let refused = try await client.get(url)
            #expect(refused.0 == 401 && refused.1["serverErrorCode"] == "AUTHENTICATION_FAILED", "\(refused)")
        }
    }

    @Test("a GET of a webcourierURL holds one of its user's long-poll places: past the cap, THROTTLED")
    func webcourierCountsAgainstTheLongPollCap() async throws {
        let world = try APIWorld()
        let box = APIBox()
        try await Self.serving(world, wait: .seconds(60), configure: {
            $0.limits.longPollsPerUser = 1
            box.api = $0
        }) { client in
            let url = try await client.webcourierURL(token: world.aliceToken)
            let path = String(url.dropFirst(Self.publicURL.count))
            let port = try #require(client.client.port)
            let waiting = try RawConnection(port: port)
            defer { waiting.close() }
            waiting.send("GET \(path) HTTP/1.1\r\nHost: cumulus\r\nConnection: close\r\n\r\n")
            let api = try #require(box.api)
            #expect(try await RateLimitTests.eventually { api.longPolls.held(by: world.alice) == 1 })
            let refused = try await client.get(url)
            #expect(refused.0 == 429 && refused.1["serverErrorCode"] == "THROTTLED", "\(refused)")
        }
    }

    @Test("across a restart nothing is missed: the last answer, never acknowledged by another GET, comes again; those acknowledged do not")
    func webcourierMissesNothingAcrossARestart() async throws {
        let world = try APIWorld()
        _ = try await world.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"db","subscriptionType":"database"}}]}"#)
        let url = try await WebCourierURLBox.make(world)
        for name in ["a", "b", "c"] {
            _ = try await world.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"T"}}]}"#)
        }
        let first = try await Self.delivered(world, url, count: 2)
        #expect(first.count == 2)
        // The node stops and starts again on the same directory.
        let restarted = try world.restarted()
        let second = try await Self.delivered(restarted, url, count: 3)
        #expect(second.first == first.last, "the unacknowledged answer comes again: \(first) then \(second)")
        #expect(Set((first + second).compactMap { $0 }).count == 3, "every notification, none skipped: \(first) then \(second)")
        #expect(second.count == 3 && second[2] == nil, "then nothing: \(second)")
    }

    /// The `nid`s of `count` GETs of `url` on a server of `world` (`nil`: null).
    static func delivered(_ world: APIWorld, _ url: String, count: Int) async throws -> [String?] {
        let box = Mutex<[String?]>([])
        try await Self.serving(world) { client in
            for _ in 0..<count {
                let (status, json) = try await client.get(url)
                #expect(status == 200, "\(json)")
                let nid = json["ck"]?["nid"]?.stringValue
                #expect(nid != nil || json == .null, "\(json)")
                if json["ck"]?["met"] != nil { #expect(json["ck"]?["met"]?["sid"] == "db" && json["ck"]?["met"]?["dbs"] == 2) }
                box.withLock { $0.append(nid) }
            }
        }
        return box.withLock { $0 }
    }
}

/// The API a configure closure saw, for a test to read its slots.
final class APIBox: @unchecked Sendable {
    var api: CloudKitAPI?
}

/// A `webcourierURL` made in process (no server needed to make one).
enum WebCourierURLBox {
    static func make(_ world: APIWorld) async throws -> String {
        var api = world.api
        api.publicURL = WebCourierTests.publicURL
        let response = await api.handle(APIRequest(
            method: "POST", path: "/device/1/\(APIWorld.containerName)/development/tokens/create",
            query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken], body: Array("{}".utf8)))
        let json = try JSONValue.parse(Data(response.bodyBytes()))
        return try #require(json["webcourierURL"]?.stringValue, "\(json)")
    }
}
