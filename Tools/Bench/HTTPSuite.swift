import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import CumulusStorage
import Foundation
import Logging

/// The HTTP server's figures: single-record `records/modify` requests per second and
/// p99 latency over loopback, driven by `wrk` with 1 and 64 connections, each beside
/// the engine doing the same save in process (`Database.modify(saving: [record])` from
/// as many concurrent tasks) in the same run, against a container set up the same way.
enum HTTPSuite: BenchSuite {
    static let name = "http"

    /// How long each measurement runs; `--quick` shortens them.
    struct Sizes {
        /// Timed seconds per figure (HTTP and in-process alike).
        var seconds: Int
        /// Untimed seconds before each figure, at the same concurrency.
        var warmUpSeconds: Int
        /// Concurrent connections (HTTP) / tasks (in process).
        var concurrency: [Int]

        static let full = Sizes(seconds: 8, warmUpSeconds: 1, concurrency: [1, 64])
        static let quick = Sizes(seconds: 5, warmUpSeconds: 1, concurrency: [1, 64])
    }

    /// The container name the tokens are minted for (the one `serve --dev` uses).
    static let containerName = "iCloud.com.example.cumulus"
    /// The custom zone every record is saved into.
    static let zone = ZoneID(zoneName: "Bench")

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        let wrk = try Wrk.locate()
        report.section("http: single-record records/modify over loopback")
        report.note(
            "server: CumulusHTTPServer (Hummingbird 2) in this process on 127.0.0.1, own data directory under /tmp, "
                + "API token + user + web token minted, zone \(zone.zoneName) in the user's private database")
        report.note(
            "load: \(wrk.version), --latency, one POST records/modify per request, one forceReplace of a new record "
                + "(unique name per request, ~\(Self.sampleJSON(name: "x").count)-byte body); "
                + "in-process: N tasks each awaiting Database.modify(saving: [record], savePolicy: .allKeys) of the same record; "
                + "\(sizes.warmUpSeconds) s untimed warm-up, then \(sizes.seconds) s timed, each figure once")
        report.note(
            "a shared 2-core machine: wrk, the server's event loops and the log writer share both cores; "
                + "durable (fsync per commit group) on both sides")
        if quick { report.note("--quick: \(sizes.seconds) s per figure instead of \(Sizes.full.seconds) s") }

        for connections in sizes.concurrency {
            let plural = connections == 1 ? "" : "s"
            // Alternate: engine first, then HTTP, so drift in fsync cost hits both.
            let local = try await inProcessRun(tasks: connections, sizes: sizes)
            let remote = try await httpRun(connections: connections, sizes: sizes, wrk: wrk)
            report.compare(
                "requests/s, \(connections) connection\(plural)", Figure(remote.rate, "req/s"),
                baseline: "in-process, \(connections) task\(plural)", Figure(local.rate, "saves/s"),
                target: connections == 64 ? .atLeast(0.5) : nil)
            report.compare(
                "  p99 latency, \(connections) connection\(plural)", Figure(remote.p99 * 1000, "ms"),
                baseline: "in-process p99", Figure(local.p99 * 1000, "ms"))
            report.compare(
                "  p50 latency, \(connections) connection\(plural)", Figure(remote.p50 * 1000, "ms"),
                baseline: "in-process p50", Figure(local.p50 * 1000, "ms"))
            report.info("  commits per group (fsync), HTTP", Figure(remote.commitsPerGroup, "commits"))
            report.info("  commits per group (fsync), in-process", Figure(local.commitsPerGroup, "commits"))
            report.detail(
                "  wrk",
                "\(Report.grouped(Int64(remote.requests))) requests in \(Report.format(remote.elapsed)) s, "
                    + "non-2xx \(remote.non2xx), socket errors \(remote.socketErrors); "
                    + "log head +\(Report.grouped(Int64(remote.headAdvance)))")
            if let problem = remote.problem { report.detail("  WARNING", problem) }
        }

        // Without fsync both sides are CPU-bound, so the ratio shows what the HTTP
        // stack itself costs (information only; the target is on the durable figure).
        let connections = sizes.concurrency.max() ?? 64
        report.section("http: the same without fsync (CPU only; information)")
        report.note("LMDB NOSYNC on both sides; same runs otherwise")
        let local = try await inProcessRun(tasks: connections, sizes: sizes, durable: false)
        let remote = try await httpRun(connections: connections, sizes: sizes, wrk: wrk, durable: false)
        report.compare(
            "requests/s, \(connections) connections", Figure(remote.rate, "req/s"),
            baseline: "in-process, \(connections) tasks", Figure(local.rate, "saves/s"))
        report.compare(
            "  p99 latency, \(connections) connections", Figure(remote.p99 * 1000, "ms"),
            baseline: "in-process p99", Figure(local.p99 * 1000, "ms"))
        report.detail(
            "  wrk",
            "\(Report.grouped(Int64(remote.requests))) requests in \(Report.format(remote.elapsed)) s, "
                + "non-2xx \(remote.non2xx), socket errors \(remote.socketErrors); "
                + "log head +\(Report.grouped(Int64(remote.headAdvance)))")
        if let problem = remote.problem { report.detail("  WARNING", problem) }

        try await hostileLoadLatency(quick: quick, report: report)
    }
}

// MARK: - Setup

/// A fresh data directory with what `serve --dev` mints: an API token, a user and a
/// web token, plus the bench zone in the user's private database.
final class HTTPBenchStore: Sendable {
    let directory: ScratchDirectory
    let container: Container
    let auth: AuthStore
    let metrics: ServerMetrics
    let user: String
    let apiToken: String
    let webToken: String
    let db: Database

    /// `durable: false` skips fsync (LMDB's NOSYNC), for the CPU-only comparison.
    init(_ label: String, durable: Bool = true) async throws {
        directory = ScratchDirectory("http-\(label)")
        var environmentOptions = LMDBEnvironment.Options()
        environmentOptions.durable = durable
        let metrics = ServerMetrics()
        var writerOptions = LogWriter.Options()
        writerOptions.observer = { metrics.recordGroup($0) }
        self.metrics = metrics
        container = try Container(path: directory.path, environmentOptions: environmentOptions, writerOptions: writerOptions)
        auth = try AuthStore(environment: container.store.logEnvironment)
        user = try auth.addUser()
        apiToken = try auth.createAPIToken(container: HTTPSuite.containerName, environment: .development)
        webToken = try auth.createWebAuthToken(for: user, container: HTTPSuite.containerName)
        db = container.database(DatabaseID(container: HTTPSuite.containerName, scope: .private, owner: user))
        for (zone, result) in try await db.saveZones([HTTPSuite.zone], as: user) {
            guard case .success = result else { throw BenchFailure("creating zone \(zone.zoneName): \(result)") }
        }
    }

    /// The log's head sequence.
    var head: UInt64 { container.store.head.sequence }

    /// Commits and write groups the log writer has made so far.
    var writerCounts: (commits: Double, groups: Double) {
        let statistics = container.writer.statistics
        return (Double(statistics.commits), Double(statistics.groups))
    }

    func close() {
        container.close()
        directory.remove()
    }
}

// MARK: - Records

extension HTTPSuite {
    /// The fields every saved record carries (the same on the wire and in process).
    static let title = "Review the pull request for the HTTP bench"
    static let notes =
        "Check the figures against the in-process run, note the ratio and the target, "
        + "and write down why the gap is what it is; then book flights to Lisbon and call mum."
    static let dueDate: Int64 = 1_790_000_000_000

    /// The record the in-process run saves, named `name`.
    static func sampleRecord(name: String) -> Record {
        var record = Record(recordType: "TodoItem", recordID: RecordID(recordName: name, zoneID: zone))
        record["title"] = .string(title)
        record["notes"] = .string(notes)
        record["dueDate"] = .timestamp(Timestamp(millisecondsSince1970: dueDate))
        record["priority"] = .int64(2)
        record["done"] = .int64(0)
        return record
    }

    /// The `records/modify` body the HTTP run sends, for a record named `name`; the
    /// Lua script builds exactly this with its own names.
    static func sampleJSON(name: String) -> String {
        #"{"zoneID":{"zoneName":"\#(zone.zoneName)"},"operations":[{"operationType":"forceReplace","record":{"recordName":""#
            + name
            + #"","recordType":"TodoItem","fields":{"title":{"value":"\#(title)"},"notes":{"value":"\#(notes)"},"#
            + #""dueDate":{"value":\#(dueDate),"type":"TIMESTAMP"},"priority":{"value":2,"type":"INT64"},"#
            + #""done":{"value":0,"type":"INT64"}}}}]}"#
    }
}

// MARK: - Latency

/// Rate and latency percentiles of one timed run.
struct LatencyRun {
    var rate: Double
    var p50: Double
    var p99: Double
    var commitsPerGroup: Double
}

/// The `fraction` percentile of sorted latencies (nearest rank).
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(sorted.count - 1, max(0, rank))]
}
