import CumulusEngine
import CumulusLog
import Prometheus
import Synchronization

/// What `/metrics` reports, in Prometheus's text format (swift-prometheus):
/// requests by route and status, commits and group sizes, append and commit (fsync)
/// latency, the writer thread's CPU time, map size used, log head, open notification streams, and the hits of
/// every limit (``ServerLimits/Hit``).
///
/// There is no notifier lag to report: notifications are written in the very
/// transaction of the commit that causes them (`Docs/ARCHITECTURE.md`).
public final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let requestCounters = Mutex<[String: Counter]>([:])
    private let commits: Counter
    private let groupSize: ValueHistogram
    private let appendLatency: DurationHistogram
    private let commitLatency: DurationHistogram
    private let writerCPU: Counter
    private let openStreams: Gauge
    private let mapUsed: (log: Gauge, views: Gauge)
    private let logHead: Gauge
    private let viewsBehind: Gauge
    private let viewsUnsynced: Gauge
    private let viewsSnapshot: Gauge
    private let viewsSyncs: Gauge
    private let limitHits: [ServerLimits.Hit: Counter]
    private let requestLatency: DurationHistogram
    /// The last minutes, for the console's charts (``MetricsTimeline``).
    public let timeline = MetricsTimeline()

    /// A fresh set of metrics.
    public init() {
        commits = registry.makeCounter(descriptor: Self.name("commits", "total", "Commits appended to the log"))
        groupSize = registry.makeValueHistogram(
            descriptor: Self.name("group", "commits", "Commits per write transaction (group commit)"),
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
        let latencies: [Duration] = [.microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(2),
                                      .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                                      .milliseconds(100), .milliseconds(250), .seconds(1)]
        appendLatency = registry.makeDurationHistogram(
            descriptor: Self.name("append", "seconds", "Planning, appending and applying views per group"), buckets: latencies)
        commitLatency = registry.makeDurationHistogram(
            descriptor: Self.name("commit", "seconds", "Committing a group's transaction, fsync included"), buckets: latencies)
        requestLatency = registry.makeDurationHistogram(
            descriptor: Self.name("request", "seconds", "Time from a request's arrival to its answer (JSON routes)"),
            buckets: latencies + [.milliseconds(500), .seconds(2), .seconds(5), .seconds(10), .seconds(30)])
        writerCPU = registry.makeCounter(
            descriptor: Self.name(
                "writer_cpu", "seconds_total",
                "CPU time of the log writer's one thread (planning, appending, applying views; not fsync waits)"))
        openStreams = registry.makeGauge(descriptor: Self.name("open_notification", "streams", "Open SSE notification streams"))
        let mapUsed = Self.name("map_used", "bytes", "Bytes of each LMDB environment's map in use (log, views)")
        self.mapUsed = (
            registry.makeGauge(descriptor: mapUsed, labels: [("environment", "log")]),
            registry.makeGauge(descriptor: mapUsed, labels: [("environment", "views")]))
        logHead = registry.makeGauge(descriptor: Self.name("log_head", "sequence", "Sequence of the last commit"))
        viewsBehind = registry.makeGauge(
            descriptor: Self.name("views_behind", "commits", "Commits the log holds that the views have not applied"))
        viewsUnsynced = registry.makeGauge(
            descriptor: Self.name(
                "views_unsynced", "commits",
                "Commits applied to the views since their last views sync: what a crash of the machine makes them remake"))
        viewsSyncs = registry.makeGauge(descriptor: Self.name("views_syncs", "total", "Views syncs run since the node started"))
        viewsSnapshot = registry.makeGauge(
            descriptor: Self.name(
                "views_snapshot", "sequence",
                "Commit the last views snapshot holds (0: none), which retention never drops past"))
        // Made up front, so every limit shows (at 0) before it is first hit.
        var hits: [ServerLimits.Hit: Counter] = [:]
        for hit in ServerLimits.Hit.allCases {
            hits[hit] = registry.makeCounter(
                descriptor: Self.name("limit_hits", "total", "Requests and connections stopped by a limit (Docs/SECURITY.md)"),
                labels: [("limit", hit.rawValue)])
        }
        limitHits = hits
    }

    /// Counts one request or connection stopped by `limit`.
    public func recordLimitHit(_ limit: ServerLimits.Hit) {
        limitHits[limit]?.increment()
    }

    static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "cumulus", metricName: metric, unitName: unit, helpText: help)
    }

    /// The writer's per-group observer.
    public func recordGroup(_ report: LogWriter.GroupReport) {
        guard report.commits > 0 else { return }
        commits.increment(by: Int64(report.commits))
        groupSize.record(Double(report.commits))
        appendLatency.record(report.append)
        commitLatency.record(report.commit)
        writerCPU.increment(by: report.cpu.seconds)
        timeline.group(commits: report.commits, commit: report.commit)
    }

    /// Counts one answered request, and how long it took to answer when known.
    func recordRequest(route: String, status: Int, took: Duration? = nil) {
        if let took {
            requestLatency.record(took)
            timeline.request(took: took, status: status)
        }
        let key = "\(route) \(status)"
        let counter = requestCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = registry.makeCounter(
                descriptor: Self.name("requests", "total", "HTTP requests by route and status"),
                labels: [("route", route), ("status", String(status))])
            counters[key] = made
            return made
        }
        counter.increment()
    }

    func streamOpened() { openStreams.increment() }
    func streamClosed() { openStreams.decrement() }

    /// The exposition, with gauges read from `container` now.
    func render(_ container: Container) -> String {
        let store = container.store
        if let info = try? store.logEnvironment.info() { mapUsed.log.set(Double(info.usedBytes)) }
        if let info = try? store.environment.info() { mapUsed.views.set(Double(info.usedBytes)) }
        let head = (try? store.lastSequence()) ?? store.head.sequence
        logHead.set(Double(head))
        if let applied = try? store.appliedHead().sequence { viewsBehind.set(Double(head &- min(applied, head))) }
        if case .success(let snapshot) = Result(catching: { try store.viewsSnapshot() }) {
            viewsSnapshot.set(Double(snapshot?.sequence ?? 0))
        }
        if let syncer = container.viewsSyncer {
            let statistics = syncer.statistics
            viewsUnsynced.set(Double(head &- min(statistics.lastSynced, head)))
            viewsSyncs.set(Double(statistics.syncs))
        }
        return registry.emitToString()
    }
}
