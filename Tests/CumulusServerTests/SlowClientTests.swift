import CumulusModel
import CumulusServer
import CumulusTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Clients that send slowly or hold connections (slowloris), against the real
/// server on a socket with short limits: each is cut by its limit, counted in
/// `/metrics`, and other clients are served meanwhile.
@Suite("Slow clients")
struct SlowClientTests {
    static func limits(head: Int = 1, body: Int = 1, connections: Int = 64) -> ServerLimits {
        var limits = ServerLimits()
        limits.requestHeadTimeout = .seconds(head)
        limits.requestBodyTimeout = .seconds(body)
        limits.maxConnections = connections
        return limits
    }

    /// The server over `world` with `limits`, counting into metrics of its own.
    static func app(
        _ world: APIWorld, _ limits: ServerLimits, port: Int = 0, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        CumulusHTTPServer.application(
            api: world.operatorAPI(metrics: ServerMetrics()), port: port, limits: limits, logger: Logger(label: "test"),
            onListening: onListening)
    }

    /// `cumulus_limit_hits_total` for `limit`, read from `/metrics` on a new
    /// connection (the test client's own may have been cut by the short limits).
    static func hits(_ limit: ServerLimits.Hit, port: Int) async throws -> Int {
        let connection = try RawConnection(port: port)
        defer { connection.close() }
        let text = await connection.get("/metrics", headers: ["Authorization": "Bearer \(APIWorld.metricsToken)"]) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("cumulus_limit_hits_total{limit=\"\(limit.rawValue)\"}") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? -1
    }

    /// Waits until the server has counted `limit` at least once, or 60 s have passed
    /// (the caller's expectations then fail and say what was missing).
    static func waitForHit(_ limit: ServerLimits.Hit, port: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await hits(limit, port: port) < 1, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Sends `text` one byte every 100 ms on `connection` until it has all gone or
    /// the server closed the connection.
    static func trickle(_ text: String, on connection: RawConnection) -> Task<Void, Never> {
        Task.detached {
            for byte in text.utf8 {
                connection.send(String(decoding: [byte], as: UTF8.self))
                try? await Task.sleep(for: .milliseconds(100))
                if Task.isCancelled { return }
            }
        }
    }

    @Test("heads trickled byte by byte are cut at the head timeout; another client is answered while they hang")
    func trickledHeadsAreCut() async throws {
        let world = try APIWorld()
        // A head timeout long enough to see others served while the slow ones still
        // hang, however loaded the machine (under `make test` one request has taken
        // more than 15 s); the heads would need 80 s to arrive.
        let app = Self.app(world, Self.limits(head: 60))
        try await app.testLive { client in
            let port = try #require(client.port)
            let slow = try (0..<8).map { _ in try RawConnection(port: port) }
            let head = "GET /healthz HTTP/1.1\r\nHost: cumulus\r\nX-Slow: " + String(repeating: "a", count: 800) + "\r\n\r\n"
            let senders = slow.map { Self.trickle(head, on: $0) }
            try await Task.sleep(for: .milliseconds(300))
            try await client.execute(uri: HostileClientTests.uri(world, "zones/list"), method: .get) { response in
                #expect(response.status == .ok)
            }
            // Answered while every slow head was still arriving (they need 80 s).
            for connection in slow { #expect(await !connection.closedByServer(within: .zero)) }
            for connection in slow { #expect(await connection.closedByServer(within: RawConnection.patience)) }
            for sender in senders { sender.cancel() }
            slow.forEach { $0.close() }
            for sender in senders { await sender.value }
            #expect(try await Self.hits(.requestHeadTimeout, port: port) >= 8)
        }
    }

    @Test("a body trickled past the body timeout is cut, and counted")
    func trickledBodyIsCut() async throws {
        let world = try APIWorld()
        let app = Self.app(world, Self.limits(body: 1))
        try await app.testLive { client in
            let port = try #require(client.port)
            let connection = try RawConnection(port: port)
            connection.send(
                "POST \(HostileClientTests.uri(world, "zones/lookup")) HTTP/1.1\r\nHost: cumulus\r\nContent-Length: 1000\r\n\r\n")
            let sender = Self.trickle(String(repeating: " ", count: 1000), on: connection)
            #expect(await connection.closedByServer(within: RawConnection.patience))
            sender.cancel()
            connection.close()
            await sender.value
            #expect(try await Self.hits(.requestBodyTimeout, port: port) == 1)
        }
    }

    @Test("an SSE stream ends at its lifetime, its place given back; the client's reconnect is served")
    func streamsEndAtTheirLifetime() async throws {
        let world = try APIWorld()
        var api = world.operatorAPI(metrics: ServerMetrics())
        api.limits.notificationStreamLifetime = .seconds(1)
        let app = CumulusHTTPServer.application(api: api, port: 0, limits: Self.limits(head: 1), logger: Logger(label: "test"))
        let path = "/database/1/\(APIWorld.containerName)/development/notifications/stream"
            + "?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        try await app.testLive { client in
            let port = try #require(client.port)
            // All four of the user's places, held by streams that never read. Each
            // sends its request as it connects: the head timeout is 1 s here.
            var streams: [RawConnection] = []
            for _ in 0..<4 {
                let stream = try RawConnection(port: port)
                stream.send("GET \(path) HTTP/1.1\r\nHost: cumulus\r\n\r\n")
                #expect(await stream.statusLine()?.contains(" 200 ") == true)
                streams.append(stream)
            }
            // Each ends (then its idle connection is cut by the head timeout).
            for stream in streams { #expect(await stream.closedByServer(within: RawConnection.patience)) }
            streams.forEach { $0.close() }
            let again = try RawConnection(port: port)
            defer { again.close() }
            again.send("GET \(path) HTTP/1.1\r\nHost: cumulus\r\n\r\n")
            #expect(await again.statusLine()?.contains(" 200 ") == true)
        }
    }

    @Test("a chunked body reserves the largest body from the budget; past the budget TRY_AGAIN_LATER with retryAfter, before the body is read")
    func chunkedBodiesReserveTheLimit() async throws {
        let world = try APIWorld()
        var limits = Self.limits(body: 30)
        limits.maxBodyBufferBytes = CloudKitAPI.maxBodyBytes
        let app = Self.app(world, limits)
        try await app.testLive { client in
            let port = try #require(client.port)
            let uri = HostileClientTests.uri(world, "zones/lookup")
            // No length: it may grow to 4 MiB, which is the whole budget here.
            let chunked = try RawConnection(port: port)
            defer { chunked.close() }
            chunked.send("POST \(uri) HTTP/1.1\r\nHost: cumulus\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"zon\r\n")
            try await Task.sleep(for: .milliseconds(300))
            let small = try RawConnection(port: port)
            defer { small.close() }
            let body = #"{"zones":[]}"#
            small.send("POST \(uri) HTTP/1.1\r\nHost: cumulus\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            // Answered, then closed by the head timeout (1 s) as the connection idles.
            let answer = await small.untilClosed()
            #expect(answer?.hasPrefix("HTTP/1.1 503") == true, "\(answer ?? "nothing")")
            #expect(answer?.contains(#""retryAfter":1"#) == true)
            #expect(answer?.contains("TRY_AGAIN_LATER") == true)
        }
    }

    @Test("a request not answered within the request deadline gets TRY_AGAIN_LATER with retryAfter, counted; the server answers the next")
    func requestDeadline() async throws {
        let world = try APIWorld()
        var limits = Self.limits(head: 30, body: 30)
        limits.requestTimeout = .seconds(1)
        let app = Self.app(world, limits)
        try await app.testLive { client in
            let port = try #require(client.port)
            // A long poll allowed 20 s, for notifications that never come: the deadline answers first.
            let poll = "/database/1/\(APIWorld.containerName)/development/notifications/poll"
                + "?timeout=20&ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
            let waiting = try RawConnection(port: port)
            defer { waiting.close() }
            let answer = await waiting.get(poll)
            #expect(answer?.hasPrefix("HTTP/1.1 503") == true, "\(answer ?? "nothing")")
            #expect(answer?.contains("TRY_AGAIN_LATER") == true)
            #expect(answer?.contains("request deadline") == true)
            #expect(answer?.contains(#""retryAfter":1"#) == true)
            let next = try RawConnection(port: port)
            defer { next.close() }
            let listed = await next.get(HostileClientTests.uri(world, "zones/list"))
            #expect(listed?.hasPrefix("HTTP/1.1 200") == true, "\(listed ?? "nothing")")
            #expect(try await Self.hits(.requestTimeout, port: port) == 1)
        }
    }

    @Test("a client that stops reading a large response is cut at the response write timeout, counted; the server answers the next")
    func responseWriteTimeout() async throws {
        let world = try await Self.worldWithBigZone()
        var limits = Self.limits(head: 30, body: 30)
        limits.responseWriteTimeout = .seconds(1)
        let app = Self.app(world, limits)
        try await app.testLive { client in
            let port = try #require(client.port)
            let stalled = try Self.bigQuery(world, port: port)
            defer { stalled.close() }
            // Waits for the server to give up on the client, however long the machine takes.
            try await Self.waitForHit(.responseWriteTimeout, port: port)
            #expect(try await Self.hits(.responseWriteTimeout, port: port) == 1)
            // What the client gets now is what was in flight, then the end: not the answer.
            let received = await stalled.untilClosed() ?? ""
            #expect(received.hasPrefix("HTTP/1.1 200"))
            #expect(received.utf8.count < 10_000_000, "\(received.utf8.count) bytes")
            let next = try RawConnection(port: port)
            defer { next.close() }
            let listed = await next.get(HostileClientTests.uri(world, "zones/list"))
            #expect(listed?.hasPrefix("HTTP/1.1 200") == true)
        }
    }

    /// A world whose zone `big` holds 10 MB of records (100 of 100 KB): more than the
    /// socket buffers between the server and a client that reads nothing (4 MiB on
    /// the server's side at most, here).
    static func worldWithBigZone() async throws -> APIWorld {
        let world = try APIWorld()
        try await world.fillBigZone(records: 100)
        return world
    }

    /// A connection that asks for `count` of zone `big`'s records in one query page;
    /// with `receiveBuffer` 4 KiB and nothing read, it stalls the answer.
    static func bigQuery(_ world: APIWorld, port: Int, count: Int = 200, receiveBuffer: Int? = 4_096) throws
        -> RawConnection
    {
        let connection = try RawConnection(port: port, receiveBuffer: receiveBuffer)
        let body = #"{"zoneID":{"zoneName":"big"},"resultsLimit":\#(count),"query":{"recordType":"Blob"}}"#
        connection.send(
            "POST \(HostileClientTests.uri(world, "records/query")) HTTP/1.1\r\nHost: cumulus\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        return connection
    }

    @Test("large answers are held from the response budget until sent: while a stalled client holds it, another is TRY_AGAIN_LATER and a small one is served; once it is cut, the large one is served")
    func responseBudget() async throws {
        let world = try await Self.worldWithBigZone()
        var limits = Self.limits(head: 30, body: 30)
        limits.maxResponseBufferBytes = 1 << 20
        limits.responseWriteTimeout = .seconds(3)
        let app = Self.app(world, limits)
        try await app.testLive { client in
            let port = try #require(client.port)
            let stalled = try Self.bigQuery(world, port: port)
            defer { stalled.close() }
            /// A 2 MB answer (20 records), read whole: its status line.
            func largeQuery() async throws -> String {
                let connection = try Self.bigQuery(world, port: port, count: 20, receiveBuffer: nil)
                defer { connection.close() }
                return await connection.untilClosed() ?? ""
            }
            // Its answer has begun to arrive, so it holds the budget (the client reads the
            // status line and no more; the rest stays stalled).
            #expect(await stalled.statusLine()?.hasPrefix("HTTP/1.1 200") == true)
            let refused = try await largeQuery()
            #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused.prefix(200))")
            #expect(refused.contains(#""retryAfter":1"#))
            #expect(try await Self.hits(.responseBuffer, port: port) >= 1)
            let small = try RawConnection(port: port)
            defer { small.close() }
            #expect(await small.get(HostileClientTests.uri(world, "zones/list"))?.hasPrefix("HTTP/1.1 200") == true)
            // The write timeout cuts the stalled client and gives its bytes back.
            try await Self.waitForHit(.responseWriteTimeout, port: port)
            let served = try await largeQuery()
            #expect(served.hasPrefix("HTTP/1.1 200"), "\(served.prefix(200))")
            #expect(served.utf8.count > 2_000_000)
        }
    }

    @Test("at the connection limit new connections wait, and are served once the head timeout frees a slot")
    func connectionLimitHoldsNewcomers() async throws {
        let world = try APIWorld()
        // Served on a port of its own: HummingbirdTesting's live mode rebuilds the
        // configuration without the accept gate (`ApplicationConfiguration.with`). Port 0,
        // the one the system gives reported back: a port picked as free beforehand can
        // be taken by another test's process before the server binds it.
        let listening = ListeningPort()
        let app = Self.app(world, Self.limits(head: 1, connections: 3), onListening: { listening.set($0) })
        try await Self.serving(app, port: listening) { port in
            // Three connections that never send a byte fill the server.
            let idle = try (0..<3).map { _ in try RawConnection(port: port) }
            try await Task.sleep(for: .milliseconds(200))
            let newcomer = try RawConnection(port: port)
            newcomer.send("GET /healthz HTTP/1.1\r\nHost: cumulus\r\n\r\n")
            #expect(await newcomer.statusLine()?.hasPrefix("HTTP/1.1 200") == true)
            // Served only after the server had closed an idle one.
            var closedOne = false
            for connection in idle where await connection.closedByServer(within: .zero) { closedOne = true }
            #expect(closedOne)
            idle.forEach { $0.close() }
            newcomer.close()
            #expect(try await Self.hits(.connections, port: port) >= 1)
        }
    }

    /// A port nothing listens on now (the kernel's pick for port 0).
    /// The port a server reported once it listened.
    final class ListeningPort: Sendable {
        private let port = Mutex<Int?>(nil)
        func set(_ value: Int) { port.withLock { $0 = value } }
        var value: Int? { port.withLock { $0 } }
    }

    /// Runs `app` around `body`, given the port it listens on: started, waited for until
    /// it reports its port and accepts, then shut down.
    static func serving(
        _ app: some ApplicationProtocol, port listening: ListeningPort, _ body: @Sendable (Int) async throws -> Void
    ) async throws {
        let group = ServiceGroup(configuration: .init(services: [app], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let deadline = ContinuousClock.now + .seconds(120)
            var bound: Int?
            while true {
                if let port = listening.value, (try? RawConnection(port: port))?.close() != nil {
                    bound = port
                    break
                }
                guard ContinuousClock.now < deadline else { throw CumulusError(.internalError, "the server did not start") }
                try await Task.sleep(for: .milliseconds(20))
            }
            guard let port = bound else { return }
            do {
                try await body(port)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
