import CumulusTestSupport
import Foundation

// A well-behaved client's latency while the server is under every kind of hostile
// load at once (issue 15): the same requests without the load are the baseline, and
// the target is CloudKit's patience with a well-behaved client, one second at p99.

extension HTTPSuite {
    /// How the hostile load is made up, and how many requests the well-behaved client times.
    struct HostileLoadSizes {
        var trickledHeads = 100
        var stalledBodies = 8
        var streams = 6
        /// Clients posting 4 MB bodies built to parse into millions of values, one after another.
        var amplifiers = 2
        var timedRequests = 200

        static let full = HostileLoadSizes()
        static let quick = HostileLoadSizes(timedRequests: 60)
    }

    static func hostileLoadLatency(quick: Bool, report: Report) async throws {
        let load = quick ? HostileLoadSizes.quick : HostileLoadSizes.full
        report.section("http: a well-behaved client under hostile load")
        report.note(
            "server as above with its default limits; the client: \(load.timedRequests) sequential GET zones/list, "
                + "each on a new connection; the load, all at once: \(load.trickledHeads) request heads left unfinished, "
                + "\(load.stalledBodies) 4 MB bodies stalled after 1 MiB, \(load.streams) unread notification streams "
                + "of one user, \(load.amplifiers) clients posting 4 MB bodies of [[1],[1],…] one after another; "
                + "the baseline is the same client on the same server before the load starts")
        let store = try await HTTPBenchStore("hostile")
        defer { store.close() }
        let server = try await BenchServer.start(store)
        defer { server.task.cancel() }
        let port = server.port

        let base = "/database/1/\(containerName)/development"
        let credentials = "ckAPIToken=\(store.apiToken)&ckWebAuthToken=\(store.webToken)"
        let list = "\(base)/private/zones/list?\(credentials)"
        let quiet = try await timeRequests(list, port: port, count: load.timedRequests)

        let hostile = HostileLoad(port: port, base: base, credentials: credentials)
        defer { hostile.close() }
        try hostile.trickleHeads(load.trickledHeads)
        try hostile.stallBodies(load.stalledBodies)
        try hostile.holdStreams(load.streams)
        let amplifiers = (0..<load.amplifiers).map { _ in
            Task.detached {
                var answers: [String: Int] = [:]
                while !Task.isCancelled {
                    guard let connection = try? hostile.amplifyingModify() else { break }
                    _ = await connection.sendAll(HostileLoad.amplifyingBody)
                    let answer = await connection.untilClosed() ?? ""
                    connection.close()
                    let code = ["LIMIT_EXCEEDED", "TRY_AGAIN_LATER"].first { answer.contains($0) } ?? "other"
                    answers[code, default: 0] += 1
                }
                return answers
            }
        }
        let loaded = try await timeRequests(list, port: port, count: load.timedRequests)
        amplifiers.forEach { $0.cancel() }
        var answers: [String: Int] = [:]
        for task in amplifiers { answers.merge(await task.value, uniquingKeysWith: +) }
        try await server.stop()

        report.compare(
            "p50 latency under hostile load", Figure(loaded.p50 * 1000, "ms"),
            baseline: "same, without the load", Figure(quiet.p50 * 1000, "ms"))
        report.compare(
            "p99 latency under hostile load", Figure(loaded.p99 * 1000, "ms"),
            baseline: "same, without the load", Figure(quiet.p99 * 1000, "ms"))
        report.compare(
            "  p99 against the target", Figure(loaded.p99 * 1000, "ms"), baseline: "target", Figure(1000, "ms"),
            target: .atMost(1))
        report.info("  max latency under hostile load", Figure(loaded.max * 1000, "ms"))
        report.detail(
            "  amplifying bodies answered",
            answers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if loaded.failures > 0 { report.detail("  WARNING", "\(loaded.failures) of the client's requests were not answered 200") }
    }

    /// `count` sequential GETs of `path`, each on a new connection: their latency
    /// percentiles, and how many were not answered 200.
    private static func timeRequests(_ path: String, port: Int, count: Int) async throws
        -> (p50: Double, p99: Double, max: Double, failures: Int)
    {
        var latencies: [Double] = []
        var failures = 0
        let clock = ContinuousClock()
        for _ in 0..<count {
            let start = clock.now
            let connection = try RawConnection(port: port)
            let answer = await connection.get(path)
            connection.close()
            latencies.append(seconds(clock.now - start))
            if answer?.hasPrefix("HTTP/1.1 200") != true { failures += 1 }
        }
        let sorted = latencies.sorted()
        return (percentile(sorted, 0.50), percentile(sorted, 0.99), sorted.last ?? 0, failures)
    }
}
