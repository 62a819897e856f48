import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import CumulusStorage
import Foundation
import Logging
import Testing

@testable import CumulusReplication

/// A leader with `--retain-commits`: it keeps its newest commits and what its followers
/// need, refuses a follower behind what it keeps, and the node still works from what
/// remains — views, change feeds, `verify` — while a rebuild from the log is refused.
@Suite("Log retention on a leader")
struct LogRetentionTests {
    /// A leader holding about `commits` commits, its replication side, and retention
    /// keeping `keep` of them, in batches of `batch`.
    static func leader(
        commits: Int, keep: UInt64, batch: Int = 1_000, grace: Duration = .zero, snapshotEvery: UInt64? = nil
    ) async throws -> (Container, ReplicationLeader, LogRetention) {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        try await ReplicationWorld.makeCommits(commits, on: container)
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        var policy = LogRetention.Policy(keep: keep)
        policy.batchSize = batch
        policy.followerGrace = grace
        if let snapshotEvery { policy.snapshotEvery = snapshotEvery }
        return (container, leader, LogRetention(node: leader.node, leader: leader, policy: policy, logger: Logger(label: "test")))
    }

    static func remove(_ container: Container) {
        let path = container.path
        container.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    @Test("with no follower, the leader keeps exactly its newest N commits, dropped in bounded batches")
    func keepsTheNewest() async throws {
        let (container, _, retention) = try await Self.leader(commits: 300, keep: 50, batch: 40)
        defer { Self.remove(container) }
        let store = container.store
        let head = store.head.sequence
        let dropped = try await retention.dropDue()
        #expect(UInt64(dropped) == head - 50)
        #expect(store.firstRetained == head - 49)
        #expect(try store.range(from: store.firstRetained).count == 50)
        #expect(retention.target() == nil)
        #expect(try await retention.dropDue() == 0)
        // More writes: only the new excess goes.
        _ = try await ReplicationWorld.database(container).saveZones(
            [ZoneID(zoneName: "More", ownerName: ReplicationWorld.user)], as: ReplicationWorld.user)
        #expect(try await retention.dropDue() == 1)
        #expect(store.firstRetained == store.head.sequence - 49)
    }

    @Test("retention takes a views snapshot before it drops, never drops a commit after the last one, and takes the next once its target is snapshotEvery commits past it")
    func dropsNothingAfterTheLastViewsSnapshot() async throws {
        let (container, _, retention) = try await Self.leader(commits: 100, keep: 10, snapshotEvery: 30)
        defer { Self.remove(container) }
        let store = container.store
        #expect(try store.viewsSnapshot() == nil)
        _ = try await retention.dropDue()
        let first = try #require(try store.viewsSnapshot())
        #expect(first == store.head, "taken before the drop, at the views' applied head")
        #expect(store.firstRetained == store.head.sequence - 9)

        /// Commits until retention's target (the head less 10) is at least `past` past the first snapshot.
        func commit(untilTargetIs past: UInt64) async throws {
            while store.head.sequence < first.sequence + 10 + past { try await ReplicationWorld.makeCommits(1, on: container) }
        }
        // The target 15 to 29 past the snapshot: no new snapshot, and the drop stops
        // at it, keeping more than 10 commits.
        try await commit(untilTargetIs: 15)
        #expect(store.head.sequence < first.sequence + 10 + 30)
        _ = try await retention.dropDue()
        #expect(try store.viewsSnapshot() == first)
        #expect(store.firstRetained == first.sequence + 1)
        #expect(store.head.sequence - store.firstRetained + 1 > 10)

        // 30 or more past it: a new snapshot, and the drop goes on.
        try await commit(untilTargetIs: 30)
        _ = try await retention.dropDue()
        let second = try #require(try store.viewsSnapshot())
        #expect(second == store.head)
        #expect(store.firstRetained == store.head.sequence - 9)
        #expect(try FileManager.default.contentsOfDirectory(atPath: ViewsSnapshot.directory(ofData: container.path)).count == 1,
            "the older snapshot is removed")
    }

    @Test("a leader that has just started drops nothing until its followers have had the grace to report")
    func aNewLeaderWaitsForItsFollowers() async throws {
        do {
            // Within the grace (an hour here), nothing goes.
            let (container, _, retention) = try await Self.leader(commits: 100, keep: 10, grace: .seconds(3600))
            defer { Self.remove(container) }
            #expect(retention.target() == nil, "nothing goes while followers may still be reconnecting")
            #expect(try await retention.dropDue() == 0)
            #expect(container.store.firstRetained == 1)
        }
        // Past it, a follower that came back holds back what it needs (an open stream,
        // which holds however long the checks below take), and the rest goes.
        let grace = Duration.milliseconds(200)
        let (container, leader, retention) = try await Self.leader(commits: 100, keep: 10, grace: grace)
        defer { Self.remove(container) }
        let store = container.store
        #expect(retention.target() == nil, "the first look starts the grace")
        try await Task.sleep(for: grace + .milliseconds(50))
        let hash40 = try #require(try store.chainHash(at: 40))
        let stream = try leader.openStream(follower: "back", identity: store.identity, after: 40, hash: hash40)
        #expect(retention.target() == 40)
        try await retention.dropDue()
        #expect(store.firstRetained == 41)
        withExtendedLifetime(stream) {}
    }

    @Test("commits a streaming follower needs are kept; a follower silent past the grace holds nothing back")
    func keepsWhatFollowersNeed() async throws {
        let (container, leader, retention) = try await Self.leader(commits: 200, keep: 10, grace: .zero)
        defer { Self.remove(container) }
        let store = container.store
        let hash20 = try #require(try store.chainHash(at: 20))
        // An open stream at 20: commits from 21 on stay, and 20's hash (to check it by).
        let stream = try leader.openStream(follower: "streaming", identity: store.identity, after: 20, hash: hash20)
        // A follower that reported 5 and went silent longer than the grace (zero here).
        leader.report(follower: "silent", applied: 5)
        try await retention.dropDue()
        #expect(store.firstRetained == 21)
        #expect(store.retainedBase == LogHead(sequence: 20, hash: hash20))
        // The streaming follower reconnects at its position and is served.
        _ = try leader.openStream(follower: "streaming", identity: store.identity, after: 20, hash: hash20)
        // The silent one is behind what is kept: refused as such, not as diverged.
        #expect(throws: ReplicationError.self) {
            try leader.openStream(follower: "silent", identity: store.identity, after: 5, hash: LogHead.genesisHash)
        }
        do {
            _ = try leader.openStream(follower: "silent", identity: store.identity, after: 5, hash: LogHead.genesisHash)
        } catch let error as ReplicationError {
            guard case .behindRetention(let why) = error else {
                Issue.record("expected behindRetention, got \(error)")
                return
            }
            #expect(why.contains("21"))
        }
        // A follower already behind holds nothing back either: the stream's follower
        // catches up (reports its head), and retention goes on to the newest 10.
        leader.report(follower: "streaming", applied: store.head.sequence)
        withExtendedLifetime(stream) {}
        try await retention.dropDue()
        #expect(store.firstRetained == store.head.sequence - 9)
    }

    @Test("the stream endpoint answers 410 to a follower behind retention, and hello says where the log starts")
    func endpointsSayGone() async throws {
        let (container, leader, retention) = try await Self.leader(commits: 100, keep: 10)
        defer { Self.remove(container) }
        try await retention.dropDue()
        let store = container.store
        let endpoints = ReplicationEndpoints(node: leader.node, secret: "s", leader: leader, follower: nil)
        let query = [
            "follower": "f", "logID": Hex.encode(store.logID), "epoch": String(store.epoch), "after": "0",
            "hash": Hex.encode(LogHead.genesisHash),
        ]
        let answer = await endpoints.answer(
            APIRequest(
                method: "GET", path: "/replication/stream", query: query, headers: try await endpoints.sessionHeaders(secret: "s")))
        guard case .json(410, let body) = answer else {
            Issue.record("expected 410, got \(answer)")
            return
        }
        #expect(String(decoding: body, as: UTF8.self).contains("snapshot"))
        #expect(leader.hello().retainedFrom == store.firstRetained)
    }

    @Test("in the public database, a deletion whose commit was dropped is left out of changes: its type is unknown")
    func publicTombstonesOfDroppedCommits() async throws {
        let (container, _, retention) = try await Self.leader(commits: 20, keep: 5)
        defer { Self.remove(container) }
        let user = ReplicationWorld.user
        let db = container.publicDatabase(container: ReplicationWorld.containerID)
        let gone = RecordID(recordName: "gone")
        _ = try await db.modify(saving: [Record(recordType: "Note", recordID: gone)], savePolicy: .allKeys, as: user)
        let kept = try await db.fetchZoneChanges(.default, as: user)
        _ = try await db.modify(deleting: [gone], as: user)
        #expect(try await db.fetchZoneChanges(.default, since: kept.token, as: user).deleted.map(\.recordID) == [gone])
        // Later commits push the deletion out of the retained log.
        try await ReplicationWorld.makeCommits(20, on: container, seed: 1)
        try await retention.dropDue()
        let changes = try await db.fetchZoneChanges(.default, since: kept.token, as: user)
        #expect(changes.deleted.isEmpty, "\(changes.deleted)")
    }

    @Test("a truncated node still serves changes from the start, verifies, and refuses to rebuild its views")
    func nodeWorksFromWhatRemains() async throws {
        let (container, _, retention) = try await Self.leader(commits: 400, keep: 20)
        defer { Self.remove(container) }
        let db = ReplicationWorld.database(container)
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        let before = try await db.fetchZoneChanges(zone, as: ReplicationWorld.user)
        let digests = try ReplicationWorld.digests(container)
        try await retention.dropDue()
        #expect(container.store.firstRetained > 300)
        // The zone was created by a dropped commit: changes from the start still list
        // the same records (the feed keeps its positions).
        let after = try await db.fetchZoneChanges(zone, as: ReplicationWorld.user)
        #expect(after.changed.map(\.recordID) == before.changed.map(\.recordID))
        #expect(after.deleted.map(\.recordID) == before.deleted.map(\.recordID))
        // verify proves the chain from the first retained commit and says why the views
        // were not compared.
        let report = try container.verify()
        #expect(report.isHealthy, "\(report.lines)")
        #expect(report.chain.from == container.store.firstRetained)
        #expect(report.viewsNotCompared != nil)
        // A rebuild from part of a log would be wrong: refused, and the views untouched.
        #expect(throws: StorageError.self) { try container.rebuild() }
        #expect(try ReplicationWorld.digests(container) == digests)
    }
}
