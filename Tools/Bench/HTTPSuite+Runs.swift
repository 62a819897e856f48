import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// What one HTTP run measured, and whether the writes it claims happened.
struct HTTPRun {
    var rate: Double
    var p50: Double
    var p99: Double
    var requests: Int
    var elapsed: Double
    var non2xx: Int
    var socketErrors: Int
    var headAdvance: Int
    var commitsPerGroup: Double
    /// Set when the log does not account for the requests, or some failed.
    var problem: String?
}

extension HTTPSuite {
    /// The engine alone: `tasks` tasks saving one new record per `modify` for the
    /// timed seconds, each call's latency recorded.
    static func inProcessRun(tasks: Int, sizes: Sizes, durable: Bool = true) async throws -> LatencyRun {
        let store = try await HTTPBenchStore("engine-\(tasks)", durable: durable)
        defer { store.close() }
        _ = try await saveFor(store, tasks: tasks, seconds: sizes.warmUpSeconds, prefix: "w")
        let headBefore = store.head
        let countsBefore = store.writerCounts
        let clock = ContinuousClock()
        let start = clock.now
        let latencies = try await saveFor(store, tasks: tasks, seconds: sizes.seconds, prefix: "t")
        let elapsed = seconds(clock.now - start)
        let countsAfter = store.writerCounts
        let advance = Int(store.head - headBefore)
        // Each save is one commit; the log may add one of its own (installing the
        // compression dictionary it trains after its first 1,000 commits).
        guard advance >= latencies.count, advance <= latencies.count + 1 else {
            throw BenchFailure("in-process saves: log head advanced by \(advance) for \(latencies.count) saves")
        }
        let sorted = latencies.sorted()
        return LatencyRun(
            rate: Double(latencies.count) / elapsed, p50: percentile(sorted, 0.50), p99: percentile(sorted, 0.99),
            commitsPerGroup: (countsAfter.commits - countsBefore.commits) / max(1, countsAfter.groups - countsBefore.groups))
    }

    /// `tasks` tasks saving new records until `seconds` have passed; the latency of
    /// every save, in seconds.
    private static func saveFor(_ store: HTTPBenchStore, tasks: Int, seconds limit: Int, prefix: String) async throws
        -> [Double]
    {
        let db = store.db
        let user = store.user
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(limit)
        return try await withThrowingTaskGroup(of: [Double].self) { group in
            for lane in 0..<tasks {
                group.addTask {
                    var latencies: [Double] = []
                    var index = 0
                    while clock.now < deadline {
                        let record = sampleRecord(name: "\(prefix)\(lane)-\(index)")
                        let start = clock.now
                        let result = try await db.modify(saving: [record], savePolicy: .allKeys, as: user)
                        latencies.append(seconds(clock.now - start))
                        if let (id, error) = result.itemErrors.first {
                            throw BenchFailure("in-process save of \(id.recordName) failed: \(error)")
                        }
                        index += 1
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
    }

    /// The server in this process on a free loopback port, loaded by wrk with
    /// `connections` connections; checks the log against wrk's request count.
    static func httpRun(connections: Int, sizes: Sizes, wrk: Wrk, durable: Bool = true) async throws -> HTTPRun {
        let store = try await HTTPBenchStore("server-\(connections)", durable: durable)
        defer { store.close() }
        let server = try await BenchServer.start(store)
        defer { server.task.cancel() }
        let port = server.port

        let url =
            "http://127.0.0.1:\(port)/database/1/\(containerName)/development/private/records/modify"
            + "?ckAPIToken=\(store.apiToken)&ckWebAuthToken=\(store.webToken)"
        let threads = min(connections, 2)
        _ = try await wrk.run(
            url: url, tag: "w", connections: connections, threads: threads, seconds: sizes.warmUpSeconds)
        // Requests still in flight when wrk stops are answered after it exits: let them land.
        try await settle(store)
        let headBefore = store.head
        let countsBefore = store.writerCounts
        let result = try await wrk.run(
            url: url, tag: "t", connections: connections, threads: threads, seconds: sizes.seconds)
        try await settle(store)
        let countsAfter = store.writerCounts
        let advance = Int(store.head - headBefore)
        try await server.stop()

        var problems: [String] = []
        if result.non2xx != 0 { problems.append("\(result.non2xx) non-2xx responses") }
        if result.socketErrors != 0 { problems.append("\(result.socketErrors) socket errors (\(result.socketErrorLine))") }
        // Each request is one commit. wrk does not count the requests in flight when
        // its clock stops, but the server still completes them: up to `connections` more
        // (+1 if the log installed its compression dictionary during the run).
        if advance < result.requests || advance > result.requests + connections + 1 {
            problems.append(
                "log head advanced by \(advance), wrk counted \(result.requests) requests (expected up to +\(connections + 1))")
        }
        return HTTPRun(
            rate: result.rate, p50: result.p50, p99: result.p99, requests: result.requests, elapsed: result.elapsed,
            non2xx: result.non2xx, socketErrors: result.socketErrors, headAdvance: advance,
            commitsPerGroup: (countsAfter.commits - countsBefore.commits) / max(1, countsAfter.groups - countsBefore.groups),
            problem: problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// Waits until the log head stops moving (in-flight requests done), at most 2 s.
    private static func settle(_ store: HTTPBenchStore) async throws {
        var last = store.head
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(100))
            let now = store.head
            if now == last { return }
            last = now
        }
    }

    /// A port in 18000–18999 nobody listens on or has bound on 127.0.0.1.
    static func freeLoopbackPort() throws -> Int {
        try freeLoopbackPorts(1)[0]
    }

    /// `count` different ports in 18000–18999 that nobody listens on or has bound on
    /// 127.0.0.1, for servers started together (each is free only until one binds it).
    /// Below the kernel's ephemeral range (32768 and up), so no outgoing connection is
    /// given one as its source port before its server binds it.
    static func freeLoopbackPorts(_ count: Int) throws -> [Int] {
        let ports = Array((18_000...18_999).lazy.filter { canBind(port: $0) }.prefix(count))
        guard ports.count == count else { throw BenchFailure("fewer than \(count) free ports in 18000–18999 on 127.0.0.1") }
        return ports
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func canBind(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return status == 0
    }

    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return status == 0
    }

    /// Polls until the server accepts connections (at most 10 s), failing early if it stopped.
    fileprivate static func waitUntilListening(port: Int, server: Task<Void, any Error>) async throws {
        for _ in 0..<200 {
            if canConnect(port: port) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        server.cancel()
        if case .failure(let error) = await server.result { throw BenchFailure("the server did not start: \(error)") }
        throw BenchFailure("the server did not listen on 127.0.0.1:\(port) within 10 s")
    }
}

/// The HTTP server in this process over a bench store, on a free loopback port,
/// listening: what `runService()` does, minus the signal handlers, so the bench can
/// shut it down gracefully itself.
struct BenchServer {
    let port: Int
    let services: ServiceGroup
    let task: Task<Void, any Error>

    /// Starts the server over `store` with its default limits, the request rate limits
    /// aside, and waits until it listens.
    static func start(_ store: HTTPBenchStore, configure: (inout CloudKitAPI) -> Void = { _ in }) async throws
        -> BenchServer
    {
        let port = try HTTPSuite.freeLoopbackPort()
        var logger = Logger(label: "cumulus-bench-http")
        logger.logLevel = .error
        var api = CloudKitAPI(container: store.container, auth: store.auth, metrics: store.metrics)
        // The bench measures how fast the server answers a few users sending flat out,
        // which the rate limits exist to stop.
        api.limits.requestsPerUser = .unlimited
        api.limits.requestsPerAddress = .unlimited
        configure(&api)
        let app = CumulusHTTPServer.application(api: api, host: "127.0.0.1", port: port, logger: logger)
        let services = ServiceGroup(services: [app], logger: logger)
        let task = Task { try await services.run() }
        do {
            try await HTTPSuite.waitUntilListening(port: port, server: task)
        } catch {
            task.cancel()
            throw error
        }
        return BenchServer(port: port, services: services, task: task)
    }

    /// Shuts the server down gracefully; throws if it had stopped with an error.
    func stop() async throws {
        await services.triggerGracefulShutdown()
        if case .failure(let error) = await task.result { throw BenchFailure("the server stopped with \(error)") }
    }
}
