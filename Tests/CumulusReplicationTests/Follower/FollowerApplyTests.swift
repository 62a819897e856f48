import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
import Testing

@testable import CumulusReplication

/// The follower's apply path without a network: the leader's stored frames handed
/// to the follower's writer as they would arrive.
@Suite("Follower apply")
struct FollowerApplyTests {
    @Test("frames applied in batches give the leader's views and log")
    func appliesToSameState() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        try await ReplicationWorld.makeCommits(600, on: leader)
        let follower = try ReplicationWorld.follower(of: leader)
        var next: UInt64 = 1
        while true {
            let frames = try leader.store.rawFrames(from: next, limit: 97, maxBytes: 1 << 20)
            if frames.isEmpty { break }
            let commits = try await follower.writer.replicate(frames)
            #expect(commits.first?.sequence == next)
            next += UInt64(frames.count)
        }
        #expect(follower.store.head == leader.store.head)
        #expect(try ReplicationWorld.digests(follower) == ReplicationWorld.digests(leader))
        // The follower's own verify: chain intact, views equal a rebuild from its log.
        #expect(try follower.verify().isHealthy)
        // And it serves the leader's records.
        let db = ReplicationWorld.database(follower)
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        let record = try db.fetch(RecordID(recordName: "s0-w0-30", zoneID: zone), as: ReplicationWorld.user)
        #expect(record.fields["title"] == .string("item 30 of 0"))
        leader.close()
        follower.close()
    }

    @Test("a frame altered in transit is refused and nothing of its batch is applied")
    func alteredFrameRefused() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        try await ReplicationWorld.makeCommits(200, on: leader)
        let follower = try ReplicationWorld.follower(of: leader)
        _ = try await follower.writer.replicate(try leader.store.rawFrames(from: 1, limit: 10, maxBytes: 1 << 20))
        let before = follower.store.head
        var frames = try leader.store.rawFrames(from: 11, limit: 10, maxBytes: 1 << 20)
        // One flipped payload byte in the fifth frame: its checksum no longer holds.
        frames[4][frames[4].count - 6] ^= 0x20
        await #expect(throws: LogError.self) { try await follower.writer.replicate(frames) }
        #expect(follower.store.head == before)
        #expect(try follower.store.lastSequence() == before.sequence)
        // The intact frames still apply afterwards: the refusal left nothing behind.
        let good = try leader.store.rawFrames(from: 11, limit: 10, maxBytes: 1 << 20)
        _ = try await follower.writer.replicate(good)
        #expect(follower.store.head.sequence == before.sequence + 10)
        leader.close()
        follower.close()
    }

    @Test("a frame with a recomputed checksum but another commit's bytes breaks the chain and is refused")
    func forgedFrameRefused() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        try await ReplicationWorld.makeCommits(30, on: leader)
        let follower = try ReplicationWorld.follower(of: leader)
        _ = try await follower.writer.replicate(try leader.store.rawFrames(from: 1, limit: 5, maxBytes: 1 << 20))
        // Frame 6 re-made with a forged chain hash and a valid CRC.
        let original = try #require(try leader.store.rawFrames(from: 6, limit: 1, maxBytes: 1 << 20).first)
        var frame = try Frame(parsing: original, expectedSequence: 6)
        frame.chainHash = Array(repeating: 0xAB, count: Frame.hashLength)
        await #expect(throws: LogError.self) { try await follower.writer.replicate([frame.encoded()]) }
        // A frame out of order is refused too.
        let later = try leader.store.rawFrames(from: 8, limit: 1, maxBytes: 1 << 20)
        await #expect(throws: LogError.self) { try await follower.writer.replicate(later) }
        #expect(follower.store.head.sequence == 5)
        leader.close()
        follower.close()
    }

    @Test("a follower refuses writes with notLeader naming its leader; it runs no reaper")
    func followerRefusesWrites() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        let follower = try ReplicationWorld.follower(of: leader)
        let db = ReplicationWorld.database(follower)
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        do {
            _ = try await db.saveZones([zone], as: ReplicationWorld.user)
            Issue.record("a follower took a write")
        } catch let error as CumulusError {
            #expect(error.code == .notLeader)
            #expect(error.message.contains("http://leader.test:8765"))
        }
        #expect(follower.store.head.sequence == 0)
        leader.close()
        follower.close()
    }

    @Test("the follower's configuration comes from the leader: same server secret, same credentials")
    func configurationCopied() throws {
        let leaderPath = ReplicationWorld.temporaryPath()
        let leader = try Container(path: leaderPath)
        let auth = try leader.store.environment.table("auth")
        try leader.store.environment.write { txn in try txn.put(auth, key: [0x61, 1, 2], value: Array("iCloud.x".utf8)) }
        let configuration = try ReplicatedConfiguration.read(from: leader.store.logEnvironment)
        let follower = try ReplicationWorld.follower(of: leader)
        #expect(try ReplicatedConfiguration.read(from: follower.store.logEnvironment) == configuration)
        #expect(follower.hasServerSecret(try #require(configuration.serverSecret)))
        #expect(follower.store.logID == leader.store.logID)
        leader.close()
        follower.close()
    }
}

@Suite("Read-only node")
struct ReadOnlyNodeTests {
    @Test("a read-only node serves reads and refuses writes with notLeader")
    func readOnly() async throws {
        let path = ReplicationWorld.temporaryPath()
        do {
            let container = try Container(path: path)
            try await ReplicationWorld.makeCommits(100, on: container)
            container.close()
        }
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        let node = try Container(path: path, environmentOptions: options)
        let db = ReplicationWorld.database(node)
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        let record = try db.fetch(RecordID(recordName: "s0-w0-0", zoneID: zone), as: ReplicationWorld.user)
        #expect(record.recordType == "Item")
        await #expect(throws: CumulusError.self) {
            _ = try await db.modify(saving: [record], savePolicy: .allKeys, as: ReplicationWorld.user)
        }
        node.close()
    }
}
