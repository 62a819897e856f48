import CumulusModel
@testable import CumulusServer
import CumulusTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// The request rate limits and the long-poll cap (issue 40), through the real server
/// over sockets. Every limit is tiny and the rate limiter's clock is frozen, so no
/// token comes back however slowly the machine runs the test.
@Suite("Rate limits")
struct RateLimitTests {
    /// An API over `world` counting into metrics of its own, with `configure` applied
    /// to its limits and its rate limiter reading a clock that never moves.
    static func api(_ world: APIWorld, _ configure: (inout APILimits) -> Void) -> CloudKitAPI {
        var api = world.operatorAPI(metrics: ServerMetrics())
        configure(&api.limits)
        let frozen = ContinuousClock.now
        api.rateLimiter = RateLimiter(api.limits, now: { frozen })
        return api
    }

    /// Serves ``api(_:_:)`` over `world` on a port of its own while `body` runs with
    /// that API and the port.
    static func serving(
        _ world: APIWorld, _ configure: (inout APILimits) -> Void, _ body: @Sendable (CloudKitAPI, Int) async throws -> Void
    ) async throws {
        let api = Self.api(world, configure)
        let app = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(api, try #require(client.port)) }
    }

    /// `operation` in `database` with the API token and, if given, a user's web token.
    static func uri(_ world: APIWorld, _ operation: String, database: String = "private", user token: String?) -> String {
        let user = token.map { "&ckWebAuthToken=\($0)" } ?? ""
        return "/database/1/\(APIWorld.containerName)/development/\(database)/\(operation)?ckAPIToken=\(world.apiToken)\(user)"
    }

    /// A long poll of `token`'s user, waiting up to `timeout` seconds.
    static func poll(_ world: APIWorld, user token: String, timeout: Int) -> String {
        "/database/1/\(APIWorld.containerName)/development/notifications/poll"
            + "?timeout=\(timeout)&ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(token)"
    }

    /// The whole answer to a `GET` of `path` on a connection of its own.
    static func get(_ path: String, port: Int, headers: [String: String] = [:]) async throws -> String {
        let connection = try RawConnection(port: port)
        defer { connection.close() }
        return await connection.get(path, headers: headers) ?? "nothing"
    }

    /// The JSON body of an answer.
    static func body(_ answer: String) throws -> JSONValue {
        let start = try #require(answer.range(of: "\r\n\r\n")?.upperBound)
        return try JSONValue.parse(Data(answer[start...].utf8))
    }

    /// Waits until `condition` holds, or `within` has passed; whether it holds.
    static func eventually(within: Duration = .seconds(30), _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// `count` long polls of Alice's, waiting up to a minute each, once the server
    /// holds them all (each on a connection of its own, which the server closes after
    /// the answer, for the caller to close too).
    static func waitingPolls(_ count: Int, _ world: APIWorld, _ api: CloudKitAPI, port: Int) async throws -> [RawConnection] {
        let waiting = try (0..<count).map { _ in try RawConnection(port: port) }
        for connection in waiting {
            connection.send(
                "GET \(poll(world, user: world.aliceToken, timeout: 60)) HTTP/1.1\r\nHost: cumulus\r\nConnection: close\r\n\r\n")
        }
        #expect(try await eventually { api.longPolls.held(by: world.alice) == count })
        return waiting
    }

    /// Expects `answer` to be `429 THROTTLED` with `retryAfter: 1`.
    static func expectThrottled(_ answer: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(answer.hasPrefix("HTTP/1.1 429"), "\(answer)", sourceLocation: sourceLocation)
        #expect(try body(answer)["serverErrorCode"] == "THROTTLED", sourceLocation: sourceLocation)
        #expect(try body(answer)["retryAfter"] == 1, sourceLocation: sourceLocation)
    }

    @Test("a user's burst past the limit is THROTTLED (429) with retryAfter; another user, health and metrics are served meanwhile")
    func userBurstIsThrottled() async throws {
        let world = try APIWorld()
        try await Self.serving(world, { $0.requestsPerUser = RequestRate(perSecond: 1, burst: 3) }) { _, port in
            for _ in 0..<3 {
                let answer = try await Self.get(Self.uri(world, "zones/list", user: world.aliceToken), port: port)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            }
            let refused = try await Self.get(Self.uri(world, "zones/list", user: world.aliceToken), port: port)
            try Self.expectThrottled(refused)
            let json = try Self.body(refused)
            #expect(json["reason"]?.stringValue?.contains("1 requests/s, bursts of 3") == true)
            #expect(json["uuid"]?.stringValue != nil)
            // Alice's bucket is hers: Bob is served, and so is what operators ask.
            let bob = try await Self.get(Self.uri(world, "zones/list", user: world.bobToken), port: port)
            #expect(bob.hasPrefix("HTTP/1.1 200"), "\(bob)")
            let health = try await Self.get("/healthz", port: port)
            #expect(health.hasPrefix("HTTP/1.1 200"))
            #expect(try await SlowClientTests.hits(.userRequests, port: port) == 1)
            #expect(try await SlowClientTests.hits(.addressRequests, port: port) == 0)
        }
    }

    @Test("requests with no user signed in count against their address: past its limit THROTTLED, bad tokens included; a signed-in user is not charged to it")
    func addressLimitForUnauthenticatedRequests() async throws {
        let world = try APIWorld()
        try await Self.serving(world, { $0.requestsPerAddress = RequestRate(perSecond: 1, burst: 2) }) { _, port in
            let publicList = Self.uri(world, "zones/list", database: "public", user: nil)
            for _ in 0..<2 {
                let answer = try await Self.get(publicList, port: port)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
            }
            try Self.expectThrottled(try await Self.get(publicList, port: port))
            // Guessing tokens from the same address is throttled too.
            let guessing = "/database/1/\(APIWorld.containerName)/development/public/zones/list?ckAPIToken=guess"
            let guessed = try await Self.get(guessing, port: port)
            #expect(try Self.body(guessed)["serverErrorCode"] == "THROTTLED", "\(guessed)")
            let alice = try await Self.get(Self.uri(world, "zones/list", user: world.aliceToken), port: port)
            #expect(alice.hasPrefix("HTTP/1.1 200"), "\(alice)")
            #expect(try await SlowClientTests.hits(.addressRequests, port: port) == 2)
        }
    }

    @Test("a user's long polls are capped: the one past it is THROTTLED, another user's is served, and polls that end give their places back")
    func longPollsAreCapped() async throws {
        let world = try APIWorld()
        _ = try await world.post(
            "subscriptions/modify",
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"db","subscriptionType":"database"}}]}"#)
        try await Self.serving(world, { $0.longPollsPerUser = 2 }) { api, port in
            let waiting = try await Self.waitingPolls(2, world, api, port: port)
            defer { waiting.forEach { $0.close() } }
            let refused = try await Self.get(Self.poll(world, user: world.aliceToken, timeout: 0), port: port)
            try Self.expectThrottled(refused)
            #expect(try Self.body(refused)["reason"]?.stringValue?.contains("2 long polls") == true)
            let bob = try await Self.get(Self.poll(world, user: world.bobToken, timeout: 0), port: port)
            #expect(bob.hasPrefix("HTTP/1.1 200"), "\(bob)")
            // A notification ends both polls, and each gives back its place before it
            // answers. Each answer holds it: the other clients' connections, closed
            // meanwhile, ended neither poll (a hang-up is its own connection's).
            _ = try await world.post(
                "records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T"}}]}"#)
            for connection in waiting {
                let answer = await connection.untilClosed() ?? "nothing"
                #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
                #expect(try Self.body(answer)["notifications"]?[0]?["subscriptionID"] == "db", "\(answer)")
            }
            #expect(api.longPolls.held(by: world.alice) == 0)
            let again = try await Self.get(Self.poll(world, user: world.aliceToken, timeout: 0), port: port)
            #expect(again.hasPrefix("HTTP/1.1 200"), "\(again)")
            #expect(try await SlowClientTests.hits(.longPolls, port: port) == 1)
        }
    }

    @Test("a long poll whose client hangs up gives its place back at once, not when its minute is out")
    func hungUpLongPollGivesBackItsPlace() async throws {
        let world = try APIWorld()
        try await Self.serving(world, { $0.longPollsPerUser = 1 }) { api, port in
            let waiting = try await Self.waitingPolls(1, world, api, port: port)
            defer { waiting.forEach { $0.close() } }
            try Self.expectThrottled(try await Self.get(Self.poll(world, user: world.aliceToken, timeout: 0), port: port))
            waiting[0].close()
            // The poll would hold its place for 60 s; the hang-up gives it back well within 30.
            #expect(try await Self.eventually { api.longPolls.held(by: world.alice) == 0 })
            // The place is taken again, and stays taken while another client's
            // connection closes: a hang-up ends only its own connection's poll.
            let next = try await Self.waitingPolls(1, world, api, port: port)
            defer { next.forEach { $0.close() } }
            #expect(try await Self.get("/healthz", port: port).hasPrefix("HTTP/1.1 200"))
            #expect(api.longPolls.held(by: world.alice) == 1)
        }
    }

    @Test("an IPv6 client is charged by its /64, an IPv4 one (mapped or not) by its address")
    func addressesAreChargedByNetwork() {
        #expect(RateLimiter.addressKey("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(RateLimiter.addressKey("2001:0db8:0001:0002:ffff:1:2:3") == "2001:db8:1:2::/64")
        #expect(RateLimiter.addressKey("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(RateLimiter.addressKey("::ffff:192.0.2.7") == "192.0.2.7")
        #expect(RateLimiter.addressKey("192.0.2.7") == "192.0.2.7")
        #expect(RateLimiter.addressKey("not an address") == "not an address")

        // Two addresses of one /64 share a bucket: a burst of 2 is spent across them.
        var limits = APILimits()
        limits.requestsPerAddress = RequestRate(perSecond: 0.01, burst: 2)
        let frozen = ContinuousClock.now
        let limiter = RateLimiter(limits, now: { frozen })
        #expect(limiter.takeAddress("2001:db8:1:2::1") == nil)
        #expect(limiter.takeAddress("2001:db8:1:2::ffff") == nil)
        #expect(limiter.takeAddress("2001:db8:1:2:abcd::9") != nil, "the /64's burst is spent")
        #expect(limiter.takeAddress("2001:db8:1:3::1") == nil, "another /64 has its own")
    }
}
