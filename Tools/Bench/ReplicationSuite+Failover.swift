import Foundation
import NIOCore
import Synchronization

extension ReplicationSuite {
    /// Writers that find the leader by themselves, as a client of a cluster does: each
    /// saves a new record per `records/modify`, follows `NOT_LEADER`'s `leaderURL`, and
    /// moves to the next node when one does not answer. Every acknowledged save is
    /// noted with the instant its answer arrived and the node that gave it.
    final class FailoverLoad: Sendable {
        struct Acknowledgement: Sendable {
            let at: ContinuousClock.Instant
            let node: Int
            let name: String
        }

        let acknowledged = Mutex<[Acknowledgement]>([])
        private let stopped = Atomic(false)

        func stop() { stopped.store(true, ordering: .relaxed) }

        /// Runs `writers` closed loops until ``stop()``, each save given `deadline`.
        func run(_ cluster: FailoverCluster, writers: Int, deadline: Duration) async {
            let timeout = TimeAmount.nanoseconds(Int64(seconds(deadline) * 1e9))
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var target = 0
                        var index = 0
                        while !self.stopped.load(ordering: .relaxed) {
                            index += 1
                            let name = "outage-\(writer)-\(index)"
                            let node = target % cluster.nodes.count
                            switch await cluster.save(name, index, on: cluster.nodes[node], timeout: timeout) {
                            case .saved:
                                // Timed under the lock, so the list is in time order.
                                self.acknowledged.withLock {
                                    $0.append(Acknowledgement(at: ContinuousClock.now, node: node, name: name))
                                }
                                continue
                            case .notLeader(let url):
                                // During an election a follower may still name the dead leader,
                                // or none: then the next node.
                                target = url.flatMap { url in cluster.nodes.firstIndex { $0.url == url } } ?? target + 1
                            case .failed:
                                target += 1
                            }
                            // A client's pause between tries: part of the outage it sees.
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
        }

        /// The first write acknowledged after `instant` by a node other than `excluded`.
        func first(after instant: ContinuousClock.Instant, notFrom excluded: Int) -> Acknowledgement? {
            acknowledged.withLock { all in
                // Answers are appended in time order: search back to `instant` only.
                var found: Acknowledgement?
                for acknowledgement in all.reversed() {
                    if acknowledgement.at <= instant { break }
                    if acknowledgement.node != excluded { found = acknowledgement }
                }
                return found
            }
        }

        /// The last write acknowledged before `instant`.
        func last(before instant: ContinuousClock.Instant) -> Acknowledgement? {
            acknowledged.withLock { all in all.last { $0.at < instant } }
        }

        /// How many writes `node` acknowledged after `instant`.
        func count(from node: Int, after instant: ContinuousClock.Instant) -> Int {
            acknowledged.withLock { all in
                var count = 0
                for acknowledgement in all.reversed() {
                    if acknowledgement.at <= instant { break }
                    if acknowledgement.node == node { count += 1 }
                }
                return count
            }
        }
    }

    /// The write outage after a leader kill (issue 16): etcd and three `cumulus serve
    /// --etcd` processes on loopback with `--lease-ttl 2 --sync-replicas 1`, four writers
    /// finding the leader by themselves, and the leader SIGKILLed `kills` times. Each
    /// outage runs from the kill to the first write another node acknowledged; the
    /// killed node is started again and streams from the new leader before the next
    /// kill. Printed beside LiteFS's published bound, 10 s. Afterwards every
    /// acknowledged write is looked up on the final leader: one missing fails the suite.
    static func failover(kills: Int, _ report: Report) async throws {
        report.section("replication: write outage after a leader kill (etcd, three nodes, --sync-replicas 1)")
        ChildProcess.killAllOnSignals()
        let began = ContinuousClock.now
        let cluster = try FailoverCluster()
        defer { cluster.stop() }
        try await cluster.start()
        let load = FailoverLoad()
        let writers = 4
        // A client's deadline for one save. CUMULUS_BENCH_FAILOVER_DEADLINE_MS changes it
        // (to see how much of the outage is the client's waiting rather than the cluster's).
        let deadlineMilliseconds = ProcessInfo.processInfo.environment["CUMULUS_BENCH_FAILOVER_DEADLINE_MS"].flatMap(Int.init) ?? 1_000
        let deadline = Duration.milliseconds(deadlineMilliseconds)
        let writing = Task { await load.run(cluster, writers: writers, deadline: deadline) }
        // Runs before `cluster.stop()`: the writers end at their next try.
        defer { load.stop() }

        var outages: [Double] = []
        var gaps: [Double] = []
        var elections: [Double] = []
        for kill in 1...kills {
            // A steady state to kill: one leader, both others streaming from it (the last
            // victim back among them), and the leader acknowledging the load.
            var current: FailoverCluster.Node?
            try await cluster.waitUntil("a leader both other nodes stream from, before kill \(kill)") {
                guard let leader = await cluster.leader(), await cluster.followers(of: leader) == 2 else { return false }
                current = leader
                return true
            }
            guard let victim = current, let index = cluster.nodes.firstIndex(where: { $0.name == victim.name }) else {
                throw BenchFailure("no leader before kill \(kill)")
            }
            let settled = ContinuousClock.now
            try await cluster.waitUntil("node \(victim.name) to acknowledge 20 writes before kill \(kill)") {
                load.count(from: index, after: settled) >= 20
            }
            let killed = ContinuousClock.now
            victim.process.kill()
            var next: FailoverLoad.Acknowledgement?
            var elected: ContinuousClock.Instant?
            try await cluster.waitUntil("another node to acknowledge a write after kill \(kill)") {
                // When another node first says it leads (to within a poll of the three
                // statuses): the outage's share that is the lease and the election.
                if elected == nil, await cluster.leader() != nil { elected = ContinuousClock.now }
                next = load.first(after: killed, notFrom: index)
                return next != nil
            }
            guard let next else { throw BenchFailure("no write acknowledged after kill \(kill)") }
            outages.append(seconds(next.at - killed))
            if let elected { elections.append(seconds(min(elected, next.at) - killed)) }
            if let before = load.last(before: killed) { gaps.append(seconds(next.at - before.at)) }
            // Back as a follower (moving a diverged tail aside first if it has one).
            try victim.process.start()
        }
        load.stop()
        await writing.value

        let lease = FailoverCluster.leaseTTL
        report.note(
            "etcd and three `cumulus serve --etcd` processes on 127.0.0.1, --lease-ttl \(lease) --sync-replicas 1 "
                + "--sync-timeout \(FailoverCluster.syncTimeout); \(writers) writers each saving a new record per modify "
                + "(\(deadlineMilliseconds) ms deadline), following NOT_LEADER's leaderURL or else trying the next node, 20 ms between tries; "
                + "\(kills) leader kills (SIGKILL), the killed node restarted and streaming from the new leader before the next; "
                + "outage = kill → first write acknowledged by another node (answer received): the lease running out "
                + "(≤ \(lease) s), the election, the new leader's follower reconnecting (--sync-replicas 1), the writers' retries; "
                + "baseline = LiteFS's published failover bound (10 s)")
        let liteFS = Figure(10, "s")
        report.compare(
            "write outage p50, \(kills) leader kills", Figure(ChangesSuite.percentile(outages, 0.5), "s"),
            baseline: "LiteFS published bound", liteFS)
        report.compare(
            "write outage max, \(kills) leader kills", Figure(ChangesSuite.percentile(outages, 1), "s"),
            baseline: "LiteFS published bound", liteFS, target: .atMost(1))
        report.detail("  each kill, s", outages.map(Report.format).joined(separator: "  "))
        func spread(_ values: [Double]) -> String {
            "p50 \(Report.format(ChangesSuite.percentile(values, 0.5)))  max \(Report.format(ChangesSuite.percentile(values, 1)))"
        }
        report.detail("  last ack before → first after, s", spread(gaps))
        report.detail("  kill → another node leads, s", spread(elections) + "  (its status polled, \(elections.count) kills)")

        // No acknowledged write lost: each one looked up on the leader at the end.
        var final: FailoverCluster.Node?
        try await cluster.waitUntil("a leader after the kills") {
            final = await cluster.leader()
            return final != nil
        }
        guard let final else { throw BenchFailure("no leader after the kills") }
        let names = load.acknowledged.withLock { $0.map(\.name) }
        let missing = try await cluster.missing(names, on: final)
        report.note(
            "\(Report.grouped(Int64(names.count))) writes acknowledged; missing on the final leader (\(final.name)): "
                + "\(missing.count); \(Report.format(seconds(ContinuousClock.now - began))) s from etcd's start to this check")
        guard missing.isEmpty else {
            throw BenchFailure(
                "ACKNOWLEDGED WRITES LOST: \(missing.count) of \(names.count) are not on the final leader \(final.name), "
                    + "e.g. \(missing.prefix(10).joined(separator: ", "))")
        }
    }
}
