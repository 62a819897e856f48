import CumulusEngine
import CumulusLog
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusReplication

/// A leader with `--retain-commits` and followers it left behind, as separate
/// `cumulus serve` processes (issue #16 item 6's "Done when"). Serialized: they start
/// processes and compare whole directories.
@Suite("Retention between processes", .serialized)
struct RetentionProcessTests {
    /// The head and a chain check of the log at `path` (opened read-only).
    static func log(atPath path: String) throws -> (head: LogHead, first: UInt64, chain: ChainReport) {
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        let store = try LogStore(environment: LMDBEnvironment(path: path, options: options))
        return (store.head, store.firstRetained, try store.verifyChain())
    }

    /// Where the leader's log starts, from its hello (1: it keeps everything).
    static func retainedFrom(_ leader: NodeProcess) async -> UInt64 {
        let answer = try? await TestHTTP.replicationGET(leader.url, "/replication/hello")
        return (answer?.json["retainedFrom"] as? Int).map(UInt64.init) ?? 1
    }

    /// Saves `count` records on `node`, one commit each; the head it reports after.
    static func write(_ count: Int, from first: Int, on node: NodeProcess, in cluster: Cluster) async throws -> UInt64 {
        for index in first..<(first + count) {
            let saved = try await cluster.save("r\(index)", value: index, on: node)
            #expect(saved.status == 200, "\(saved.text)")
        }
        let head = await TestHTTP.head(node.url)
        return try #require(head)
    }

    @Test("followers left behind the leader's retained log re-seed from a streamed snapshot by themselves and converge")
    func followersBehindRetentionReseed() async throws {
        let cluster = try Cluster()
        // Grace 0: a follower that stopped holds nothing back once its stream closes.
        let leader = try await cluster.startLeader(
            "leader", extra: ["--retain-commits", "30", "--retain-follower-grace", "0"])
        // Two followers hold the start of the log, then stop.
        let early = cluster.follower("early", of: leader.url)
        let late = cluster.follower("late", of: leader.url)
        try early.start()
        try late.start()
        let firstHead = try await Self.write(10, from: 0, on: leader, in: cluster)
        try await TestHTTP.waitForHead(early.url, atLeast: firstHead, timeout: .seconds(120))
        try await TestHTTP.waitForHead(late.url, atLeast: firstHead, timeout: .seconds(120))
        #expect(early.stop() == 0, "\(early.stderr.suffix(2000))")
        #expect(late.stop() == 0, "\(late.stderr.suffix(2000))")
        let stoppedAt = try Self.log(atPath: cluster.path("early")).head.sequence

        // The leader writes well past its retention, and drops what nobody needs.
        let leaderHead = try await Self.write(80, from: 10, on: leader, in: cluster)
        var first: UInt64 = 1
        try await waitUntil("the leader to drop its old commits (its log starts at \(first), head \(leaderHead))") {
            first = await Self.retainedFrom(leader)
            // It keeps its newest 30, and back to its last views snapshot, which is at
            // most 15 (30 / 2) further (LogRetention.Policy.snapshotEvery).
            return first > stoppedAt + 1 && first >= leaderHead - 29 - 15
        }

        // At start-up: the old copy is seen to be behind before it is opened.
        try early.start()
        try await TestHTTP.waitForHead(early.url, atLeast: leaderHead, timeout: .seconds(120))
        // The same rejoin as while running (NodeLoop), decided before the copy is opened.
        #expect((early.stdout + early.stderr).contains("seeding again from a snapshot"), "\(early.stderr.suffix(2000))")

        // While running: the leader cannot be asked at start-up (frozen), so the old copy
        // is opened and served; the stream's refusal then has it re-seed.
        leader.pause()
        try late.start()
        do {
            try await TestHTTP.waitUntilUp(late.url, timeout: .seconds(120))
        } catch {
            leader.resume()
            throw error
        }
        leader.resume()
        try await TestHTTP.waitForHead(late.url, atLeast: leaderHead, timeout: .seconds(180))
        #expect((late.stdout + late.stderr).contains("seeding again from a snapshot"), "\(late.stderr.suffix(2000))")

        // A new follower asking for the whole log by stream gets a snapshot instead.
        let streamed = cluster.follower("streamed", of: leader.url, extra: ["--seed", "stream"])
        try streamed.start()
        try await TestHTTP.waitForHead(streamed.url, atLeast: leaderHead, timeout: .seconds(120))

        // They follow on from the snapshot: later writes reach all three.
        let finalHead = try await Self.write(5, from: 90, on: leader, in: cluster)
        for node in [early, late, streamed] {
            try await TestHTTP.waitForHead(node.url, atLeast: finalHead, timeout: .seconds(60))
        }
        for node in [leader, early, late, streamed] { #expect(node.stop() == 0, "\(node.stderr.suffix(2000))") }

        // Same head and chain hash as the leader, each chain sound from where it starts,
        // and the same views.
        let expected = try Self.log(atPath: cluster.path("leader"))
        #expect(expected.first > stoppedAt + 1)
        #expect(expected.chain.isIntact, "\(expected.chain)")
        let digests = try ReplicationWorld.digests(atPath: cluster.path("leader"))
        for name in ["early", "late", "streamed"] {
            let copy = try Self.log(atPath: cluster.path(name))
            #expect(copy.head == expected.head, "\(name)")
            #expect(copy.chain.isIntact, "\(name): \(copy.chain)")
            #expect(try ReplicationWorld.digests(atPath: cluster.path(name)) == digests, "\(name)")
        }
        // The old copies were moved aside, not deleted.
        let kept = try FileManager.default.contentsOfDirectory(atPath: cluster.root)
        #expect(kept.contains { $0.hasPrefix("early.behind-") }, "\(kept)")
        #expect(kept.contains { $0.hasPrefix("late.behind-") }, "\(kept)")
    }

    @Test("a follower whose views a crash of the machine may have torn, on a truncated log, moves its copy aside and re-seeds")
    func tornFollowerReseeds() async throws {
        let cluster = try Cluster()
        let leader = try await cluster.startLeader(
            "leader", extra: ["--retain-commits", "20", "--retain-follower-grace", "0"])
        let written = try await Self.write(45, from: 0, on: leader, in: cluster)
        try await waitUntil("the leader to drop its old commits") { await Self.retainedFrom(leader) > 1 }
        // Seeded from a snapshot: its log starts where the leader's does.
        let follower = cluster.follower("torn", of: leader.url)
        try follower.start()
        try await TestHTTP.waitForHead(follower.url, atLeast: written, timeout: .seconds(120))
        #expect(follower.stop() == 0, "\(follower.stderr.suffix(2000))")
        let path = cluster.path("torn")
        #expect(try Self.log(atPath: path).first > 1)

        // The machine went down while it wrote: another boot, not closed cleanly, synced
        // before its head; and the views file torn.
        try MachineCrash.simulate(dataDirectory: path, synced: 1)

        try follower.start()
        let head = try await Self.write(3, from: 45, on: leader, in: cluster)
        try await TestHTTP.waitForHead(follower.url, atLeast: head, timeout: .seconds(120))
        #expect((follower.stdout + follower.stderr).contains("may have been torn"), "\(follower.stderr.suffix(2000))")
        let aside = try FileManager.default.contentsOfDirectory(atPath: cluster.root).filter { $0.hasPrefix("torn.torn-") }
        #expect(aside.count == 1)
        #expect(follower.stop() == 0, "\(follower.stderr.suffix(2000))")
        #expect(leader.stop() == 0, "\(leader.stderr.suffix(2000))")
    }

    @Test("a cluster member behind the leader's retained log moves its copy aside and rejoins from a snapshot, in the same process")
    func clusterMemberBehindRetentionRejoins() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()
        func member(_ name: String, dev: Bool = false) -> NodeProcess {
            cluster.member(name, etcd: etcd, dev: dev, extra: ["--retain-commits", "20", "--retain-follower-grace", "0"])
        }
        let a = member("a", dev: true)
        try a.start()
        try await TestHTTP.waitUntilUp(a.url)
        cluster.takeCredentials(from: a)
        try await waitUntil("the first node to take writes", timeout: .seconds(120)) {
            (try? await cluster.save("first", value: 1, on: a))?.status == 200
        }
        let b = member("b")
        try b.start()
        try await waitUntil("the second node to follow the first", timeout: .seconds(120)) { await cluster.followed(b) == a.url }
        let firstHead = try await Self.write(5, from: 0, on: a, in: cluster)
        try await TestHTTP.waitForHead(b.url, atLeast: firstHead, timeout: .seconds(120))
        #expect(b.stop() == 0, "\(b.stderr.suffix(2000))")
        let stoppedAt = try Self.log(atPath: cluster.path("b")).head.sequence

        // The leader writes past what it keeps, and drops what nobody needs.
        let leaderHead = try await Self.write(50, from: 5, on: a, in: cluster)
        var first: UInt64 = 1
        try await waitUntil("the leader to drop its old commits (its log starts at \(first), head \(leaderHead))") {
            first = await Self.retainedFrom(a)
            // Its newest 20, and back to its last views snapshot: at most 10 further.
            return first > stoppedAt + 1 && first >= leaderHead - 19 - 10
        }

        // The member opens its old copy, is refused, moves it aside and rejoins.
        try b.start()
        try await waitUntil("the member to move its copy aside", timeout: .seconds(120)) {
            try FileManager.default.contentsOfDirectory(atPath: cluster.root).contains { $0.hasPrefix("b.behind-") }
        }
        try await waitUntil("the member, seeded anew, to follow the leader", timeout: .seconds(120)) {
            await cluster.followed(b) == a.url
        }
        let finalHead = try await Self.write(3, from: 55, on: a, in: cluster)
        try await TestHTTP.waitForHead(b.url, atLeast: finalHead, timeout: .seconds(120))
        #expect(b.isRunning)
        #expect(b.stop() == 0, "\(b.stderr.suffix(2000))")
        #expect(a.stop() == 0, "\(a.stderr.suffix(2000))")
        let leader = try Self.log(atPath: cluster.path("a"))
        let copy = try Self.log(atPath: cluster.path("b"))
        #expect(copy.head == leader.head)
        #expect(copy.chain.isIntact, "\(copy.chain)")
        #expect(try ReplicationWorld.digests(atPath: cluster.path("b")) == ReplicationWorld.digests(atPath: cluster.path("a")))
    }

    @Test("--retain-commits is refused on a follower, a read-only node, or to keep nothing")
    func retentionOptionsAreChecked() async throws {
        let cluster = try Cluster()
        let zero = await cluster.refusal(["--retain-commits", "0"])
        #expect(zero?.contains("--retain-commits keeps at least 1 commit") == true, "\(zero ?? "it started")")
        let readOnly = await cluster.refusal(["--read-only", "--retain-commits", "5"])
        #expect(readOnly?.contains("--retain-commits is for a leader") == true, "\(readOnly ?? "it started")")
        let follower = await cluster.refusal([
            "--follow", "http://127.0.0.1:9", "--replication-secret-file", cluster.secretFile, "--retain-commits", "5",
        ])
        #expect(follower?.contains("--retain-commits is for a leader") == true, "\(follower ?? "it started")")
    }
}
