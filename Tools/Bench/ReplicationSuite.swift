import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import CumulusServer
import CumulusStorage
import CumulusTestSupport
import Foundation
import Logging
import Synchronization

/// Replication (issue #8): a leader and a follower in this process, talking HTTP over
/// loopback exactly as two nodes would — the leader's real endpoints behind
/// Hummingbird, the follower's real `ReplicaFollower` with AsyncHTTPClient.
///
/// - lag under a steady 1,000 commits/s: for every commit, the time from the
///   leader publishing it durable to the follower publishing it applied (both seen
///   by watchers on the same clock), beside the leader's own write latency;
/// - semi-synchronous commit: saves/s and latency with `--sync-replicas 1`, beside
///   asynchronous replication on the same pair;
/// - the write outage after a leader kill: etcd and three `cumulus serve` processes
///   (the release `cumulus` beside this executable), beside LiteFS's published bound
///   (`ReplicationSuite+Failover.swift`);
/// - catch-up from zero: a follower streaming a whole log and applying it, beside
///   the leader's own read + decode of the same log.
enum ReplicationSuite: BenchSuite {
    static let name = "replication"

    static func run(quick: Bool, report: Report) async throws {
        // CUMULUS_BENCH_REPLICATION_RATE changes the offered load (to tell a throughput
        // limit from a latency floor); the target is stated at 1,000/s.
        let rate = ProcessInfo.processInfo.environment["CUMULUS_BENCH_REPLICATION_RATE"].flatMap(Int.init) ?? 1_000
        try await lag(seconds: quick ? 3 : 15, rate: rate, report)
        try await syncCommit(seconds: quick ? 2 : 8, report)
        try await failover(kills: quick ? 3 : 10, report)
        try await catchUp(commits: quick ? 20_000 : 100_000, report)
    }

    /// A leader serving replication on a loopback port, and a follower of it.
    final class Pair: Sendable {
        let leader: Container
        let follower: Container
        let replica: ReplicaFollower
        /// The leader's side of replication (semi-synchronous commit is set on it).
        let side: ReplicationLeader
        let client: LeaderClient
        let server: Task<Void, any Error>
        let following: Mutex<Task<Void, any Error>?> = Mutex(nil)
        let directory: ScratchDirectory
        /// What seeding the follower did, and how long it took (inside `init`).
        let seeded: FollowerSeeder.Outcome
        let seedSeconds: Double

        /// Starts the leader's server, then seeds the follower as `serve --follow --seed`
        /// does: `.stream` gives it the identity only, `.snapshot` copies the leader's
        /// environment over HTTP.
        init(
            leader: Container, directory: ScratchDirectory, seed: FollowerSeeder.Mode = .stream, followerName: String = "follower"
        ) async throws {
            self.leader = leader
            self.directory = directory
            let secret = "bench"
            let port = try HTTPSuite.freeLoopbackPort()
            var logger = Logger(label: "bench")
            logger.logLevel = .warning
            side = ReplicationLeader(container: leader, logger: logger)
            let endpoints = ReplicationEndpoints(node: side.node, secret: secret, leader: side, follower: nil)
            let auth = try AuthStore(environment: leader.store.logEnvironment)
            let api = CloudKitAPI(container: leader, auth: auth, replication: endpoints)
            let app = CumulusHTTPServer.application(api: api, host: "127.0.0.1", port: port, logger: logger)
            server = Task { try await app.runService(gracefulShutdownSignals: []) }
            let leaderURL = "http://127.0.0.1:\(port)"
            client = LeaderClient(leaderURL: leaderURL, secret: secret)
            // Wait for the server to listen before the follower's first try.
            for _ in 0..<100 where (try? await client.hello()) == nil { try await Task.sleep(for: .milliseconds(50)) }
            let followerPath = directory.path + "/" + followerName
            let began = ContinuousClock.now
            seeded = try await FollowerSeeder.prepare(path: followerPath, client: client, mode: seed, reseed: false, logger: logger)
            follower = try Container(
                path: followerPath, refusingWrites: NodeState.refusal(for: .follower(leaderURL: leaderURL)))
            seedSeconds = seconds(ContinuousClock.now - began)
            replica = ReplicaFollower(container: follower, client: client, name: "bench", logger: logger)
        }

        func startFollowing() {
            let replica = self.replica
            following.withLock { $0 = Task { try await replica.run() } }
        }

        /// Stops the follower and the server; with `leaderToo`, also closes the leader
        /// and removes the directory, which another pair may otherwise still use.
        func close(leaderToo: Bool = true) async {
            following.withLock { $0?.cancel() }
            _ = try? await following.withLock { $0 }?.value
            server.cancel()
            await client.shutdown()
            follower.close()
            if leaderToo {
                leader.close()
                directory.remove()
            }
        }
    }

    /// When each sequence became visible in a log, and other shared samples.
    final class Timeline: Sendable {
        let times = Mutex<[UInt64: ContinuousClock.Instant]>([:])
        let samples = Mutex<[Double]>([])
    }

    /// Records when each sequence becomes visible in `store` (published by `didCommit`).
    static func watch(_ store: LogStore, until last: UInt64, into timeline: Timeline) async {
        var seen = store.head.sequence
        while seen < last && !Task.isCancelled {
            await store.waitForCommit(after: seen)
            let head = store.head.sequence
            let now = ContinuousClock.now
            timeline.times.withLock { times in
                for sequence in (seen + 1)...max(seen + 1, head) where sequence <= head { times[sequence] = now }
            }
            seen = head
        }
    }

    /// A new leader in a scratch directory named `label`, a follower streaming from it,
    /// and the database the suite writes to.
    static func followedLeader(_ label: String) async throws -> (Pair, Container, Database) {
        let directory = ScratchDirectory(label)
        let leader = try Container(path: directory.path + "/leader")
        let pair = try await Pair(leader: leader, directory: directory)
        pair.startFollowing()
        return (pair, leader, leader.privateDatabase(container: "iCloud.bench", user: "_bench"))
    }

    /// Saves record `name` (its `n` field `index`) in one modify; the seconds it took.
    static func timedSave(_ name: String, _ index: Int, _ db: Database) async throws -> Double {
        let record = Record(
            recordType: "Item", recordID: RecordID(recordName: name),
            fields: ["n": .int64(Int64(index)), "title": .string("item number \(index)")])
        let sent = ContinuousClock.now
        _ = try await db.modify(saving: [record], savePolicy: .allKeys, as: "_bench")
        return seconds(ContinuousClock.now - sent)
    }

    static func lag(seconds duration: Int, rate: Int, _ report: Report) async throws {
        report.section("replication: lag under a steady \(rate) commits/s")
        let (pair, leader, db) = try await followedLeader("replication-lag")
        let total = duration * rate
        let warmUp = rate / 2
        let start = leader.store.head.sequence
        let durable = Timeline()
        let applied = Timeline()
        let last = start + UInt64(total)
        let leaderWatch = Task { await watch(leader.store, until: last, into: durable) }
        let followerWatch = Task { await watch(pair.follower.store, until: last, into: applied) }
        let writeLatencies = Timeline()
        let clock = ContinuousClock()
        let began = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                // Paced by the clock, not by completions: a steady offered load.
                try await Task.sleep(until: began + .microseconds(1_000_000 * index / rate), clock: clock)
                group.addTask {
                    let took = try await timedSave("item-\(index % 5_000)", index, db)
                    if index >= warmUp { writeLatencies.samples.withLock { $0.append(took) } }
                }
            }
            try await group.waitForAll()
        }
        let offered = Double(total) / seconds(clock.now - began)
        let deadline = clock.now + .seconds(30)
        while pair.follower.store.head.sequence < last && clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // A watcher notes a sequence after the head passed it: stopped as soon as the
        // follower's head reached the last one, it could miss noting that one. Each
        // ends by itself once it has; only a follower that never got there stops them.
        if pair.follower.store.head.sequence < last {
            leaderWatch.cancel()
            followerWatch.cancel()
        }
        await leaderWatch.value
        await followerWatch.value
        let durableTimes = durable.times.withLock { $0 }
        let appliedTimes = applied.times.withLock { $0 }
        var lags: [Double] = []
        var missing = 0
        for sequence in (start + UInt64(warmUp) + 1)...last {
            guard let made = durableTimes[sequence], let arrived = appliedTimes[sequence] else {
                missing += 1
                continue
            }
            lags.append(max(0, seconds(arrived - made)))
        }
        let writes = writeLatencies.samples.withLock { $0 }
        report.note(
            "\(total) single-record saves (modify) offered at \(rate)/s (achieved \(Report.format(offered))/s), first \(warmUp) untimed; "
                + "lag = leader published commit durable → follower published it applied (same process, same clock, HTTP over loopback); "
                + "baseline = the leader's own write latency (modify called → returned)")
        if missing > 0 { report.note("commits never seen applied within 30 s: \(missing)") }
        for (label, q) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
            let lag = ChangesSuite.percentile(lags, q) * 1_000
            report.compareWithoutTarget(
                "lag \(label)", Figure(lag, "ms"), baseline: "leader write \(label)",
                Figure(ChangesSuite.percentile(writes, q) * 1_000, "ms"))
        }
        let p99 = ChangesSuite.percentile(lags, 0.99) * 1_000
        report.compare("lag p99 vs the 10 ms target", Figure(missing > 0 ? .infinity : p99, "ms"), baseline: "target", Figure(10, "ms"), target: .atMost(1))
        await pair.close()
    }

    /// Semi-synchronous commit (`--sync-replicas 1`, issue 16): 16 callers saving one
    /// record each in a closed loop for `duration` seconds, first asynchronously, then with
    /// the follower confirming every group before it is acknowledged, on the same pair in
    /// the same run. No target: the figure is what the guarantee costs.
    static func syncCommit(seconds duration: Double, _ report: Report) async throws {
        report.section("replication: semi-synchronous commit (--sync-replicas 1)")
        let (pair, leader, db) = try await followedLeader("replication-sync")
        let callers = 16
        func closedLoop(_ phase: String) async throws -> (rate: Double, latencies: [Double]) {
            let clock = ContinuousClock()
            let began = clock.now
            let end = began + .milliseconds(Int64(duration * 1000))
            let latencies = Timeline()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for caller in 0..<callers {
                    group.addTask {
                        var index = 0
                        while clock.now < end {
                            index += 1
                            let took = try await timedSave("\(phase)-\(caller)-\(index % 500)", index, db)
                            latencies.samples.withLock { $0.append(took) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let samples = latencies.samples.withLock { $0 }
            return (Double(samples.count) / seconds(clock.now - began), samples)
        }
        let asynchronous = try await closedLoop("async")
        // The follower streams and holds everything before the mode changes.
        let deadline = ContinuousClock.now + .seconds(60)
        while pair.follower.store.head.sequence < leader.store.head.sequence, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let sync = pair.side.requireReplicas(.init(replicas: 1, timeout: .seconds(5)))
        let confirmed = try await closedLoop("sync")
        report.note(
            "\(callers) callers, each saving one record per modify in a closed loop for \(Report.format(duration)) s; "
                + "leader and follower in this process over loopback HTTP; asynchronous first, then every write "
                + "acknowledged once the follower reported it durable")
        if sync.fallbacks > 0 { report.note("writes acknowledged without confirmation: \(sync.fallbacks)") }
        report.compare(
            "saves/s, --sync-replicas 1", Figure(confirmed.rate, "saves/s"), baseline: "asynchronous",
            Figure(asynchronous.rate, "saves/s"))
        for (label, q) in [("p50", 0.5), ("p99", 0.99)] {
            report.compareWithoutTarget(
                "  save latency \(label), --sync-replicas 1", Figure(ChangesSuite.percentile(confirmed.latencies, q) * 1_000, "ms"),
                baseline: "asynchronous", Figure(ChangesSuite.percentile(asynchronous.latencies, q) * 1_000, "ms"))
        }
        await pair.close()
    }

    static func catchUp(commits: Int, _ report: Report) async throws {
        report.section("replication: catch-up from zero, \(Report.grouped(Int64(commits))) saves and a schema import")
        let directory = ScratchDirectory("replication-catch-up")
        let leader = try Container(path: directory.path + "/leader")
        // Production, with the app's schema imported first (a schema change is a commit,
        // so the follower receives it like any other): issue 14's footing, as the engine
        // and query suites have.
        let sample = SampleData.database
        try await leader.importSchema(
            EngineSuite.productionSchema, into: SchemaID(container: sample.container, environment: .production))
        let production = DatabaseID(container: sample.container, environment: .production, scope: sample.scope, owner: sample.owner)
        let workload = try await Workload.make(count: commits, database: production)
        try await appendConcurrently(leader.writer, workload.requests, 0..<commits, submitters: 64)
        let head = leader.store.head.sequence
        var decoded = 0
        let readSeconds = try measure {
            try leader.store.commits(from: 1) { _ in
                decoded += 1
                return true
            }
        }
        let pair = try await Pair(leader: leader, directory: directory)
        let clock = ContinuousClock()
        let began = clock.now
        pair.startFollowing()
        while pair.follower.store.head.sequence < head { try await Task.sleep(for: .milliseconds(5)) }
        let catchUpSeconds = seconds(clock.now - began) + pair.seedSeconds
        let same = pair.follower.store.head == leader.store.head
        report.note(
            "leader log of \(Report.grouped(Int64(head))) commits, single-record saves in production after the import of "
                + "EngineSuite.productionSchema; the follower streams it over loopback from sequence 1, "
                + "checks each frame, appends it and applies it to its views (one transaction per message of up to 1,024 frames); "
                + "baseline = the leader reading and decoding the same log (LogStore.commits), in the same run"
                + (same ? "" : "; HEADS DIFFER"))
        let readRate = Figure(Double(decoded) / readSeconds, "commits/s")
        report.compare(
            "catch-up rate, --seed stream", Figure(same ? Double(head) / catchUpSeconds : 0, "commits/s"),
            baseline: "leader read + decode", readRate, target: .atLeast(0.5))
        // What bounds catch-up: deriving the views. The leader rebuilding its own views
        // from the same log runs the same Views.apply, without network or frame checks.
        await pair.close(leaderToo: false)
        let rebuildSeconds = try measure { try leader.rebuild() }
        report.compareWithoutTarget(
            "catch-up rate, --seed stream", Figure(same ? Double(head) / catchUpSeconds : 0, "commits/s"),
            baseline: "leader rebuild (Views.apply)", Figure(Double(head) / rebuildSeconds, "commits/s"))
        // What a new follower does by default: the leader's environment (log and views)
        // copied over HTTP, then the stream from the snapshot's head. Timed from the
        // first request of the seeding to the follower holding the leader's head.
        let seeded = try await Pair(leader: leader, directory: directory, seed: .snapshot, followerName: "seeded")
        let tailBegan = clock.now
        seeded.startFollowing()
        while seeded.follower.store.head.sequence < head { try await Task.sleep(for: .milliseconds(5)) }
        let seededSeconds = seeded.seedSeconds + seconds(clock.now - tailBegan)
        let seededSame = seeded.follower.store.head == leader.store.head
        let snapshotBytes: Int
        if case .snapshot(_, let bytes) = seeded.seeded { snapshotBytes = bytes } else { snapshotBytes = 0 }
        report.note(
            "--seed snapshot (serve --follow's default): the leader's environment, \(Report.grouped(Int64(snapshotBytes))) bytes, "
                + "streamed over loopback, checked (identity, last frame) and opened, then the stream from its head; "
                + "the views arrive built, so nothing is applied" + (seededSame ? "" : "; HEADS DIFFER"))
        report.compare(
            "catch-up rate, --seed snapshot", Figure(seededSame ? Double(head) / seededSeconds : 0, "commits/s"),
            baseline: "leader read + decode", readRate, target: .atLeast(0.5))
        await seeded.close()
    }
}
