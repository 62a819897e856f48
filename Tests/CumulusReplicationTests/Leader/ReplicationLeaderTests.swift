import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
import Logging
import Testing

@testable import CumulusReplication

/// The leader's checks before it streams, and epoch fencing, in process.
@Suite("Replication leader")
struct ReplicationLeaderTests {
    static func leader(commits: Int = 50) async throws -> (Container, ReplicationLeader) {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        try await ReplicationWorld.makeCommits(commits, on: container)
        return (container, ReplicationLeader(container: container, logger: Logger(label: "test")))
    }

    @Test("a follower holding the leader's prefix gets a stream; one that diverged or is ahead is refused")
    func positionChecks() async throws {
        let (container, leader) = try await Self.leader()
        let store = container.store
        let identity = store.identity
        let hash10 = try #require(try store.chainHash(at: 10))
        _ = try leader.openStream(follower: "f", identity: identity, after: 10, hash: hash10)
        _ = try leader.openStream(follower: "f", identity: identity, after: 0, hash: LogHead.genesisHash)
        #expect(throws: ReplicationError.self) {
            try leader.openStream(follower: "f", identity: identity, after: 10, hash: Array(repeating: 1, count: 32))
        }
        #expect(throws: ReplicationError.self) {
            try leader.openStream(follower: "f", identity: identity, after: store.head.sequence + 1, hash: hash10)
        }
        let stranger = LogStore.Identity(logID: Array(repeating: 9, count: 16), epoch: 1)
        #expect(throws: ReplicationError.self) { try leader.openStream(follower: "f", identity: stranger, after: 0, hash: LogHead.genesisHash) }
        #expect(container.supersededBy == nil)
        container.close()
    }

    @Test("the stream sends the configuration, then the stored frames byte for byte, then heartbeats")
    func streamContents() async throws {
        let (container, leader) = try await Self.leader(commits: 30)
        let store = container.store
        let stream = try leader.openStream(follower: "f", identity: store.identity, after: 0, hash: LogHead.genesisHash)
        let iterator = stream.makeAsyncIterator()
        var decoder = ReplicationMessageDecoder()
        decoder.append(try #require(try await iterator.next()))
        guard case .configuration(let configuration)? = try decoder.next() else {
            Issue.record("the stream did not start with the configuration")
            return
        }
        #expect(configuration == (try ReplicatedConfiguration.read(from: store.logEnvironment)))
        decoder.append(try #require(try await iterator.next()))
        guard case .frames(let frames, let head)? = try decoder.next() else {
            Issue.record("no frames")
            return
        }
        #expect(head == store.head.sequence)
        #expect(frames == (try store.rawFrames(from: 1, limit: 10_000, maxBytes: .max)))
        decoder.append(try #require(try await iterator.next()))
        guard case .heartbeat(let beat, _)? = try decoder.next() else {
            Issue.record("no heartbeat when idle")
            return
        }
        #expect(beat == store.head.sequence)
        container.close()
    }

    @Test("a follower in a newer epoch fences the leader: it refuses writes and says it was superseded")
    func newerEpochFences() async throws {
        let (container, leader) = try await Self.leader(commits: 10)
        var newer = container.store.identity
        newer.epoch += 1
        #expect(throws: ReplicationError.self) {
            try leader.openStream(follower: "f", identity: newer, after: 0, hash: LogHead.genesisHash)
        }
        #expect(container.supersededBy == 2)
        let db = ReplicationWorld.database(container)
        do {
            _ = try await db.saveZones([ZoneID(zoneName: "More", ownerName: ReplicationWorld.user)], as: ReplicationWorld.user)
            Issue.record("a superseded leader took a write")
        } catch let error as CumulusError {
            #expect(error.code == .notLeader)
            #expect(error.message.contains("superseded"))
        }
        #expect(leader.hello().role == "superseded")
        container.close()
    }

    @Test("a change token from a newer epoch is refused as retryable and fences a leader")
    func newerEpochToken() async throws {
        let path = ReplicationWorld.temporaryPath()
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        do {
            // The promoted copy issues a token in epoch 2.
            let container = try Container(path: path)
            try await ReplicationWorld.makeCommits(10, on: container)
            container.close()
        }
        let copy = path + "-copy"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        let promoted = try Container(path: copy)
        try promoted.store.promote(applying: promoted.views.apply)
        let token = try await ReplicationWorld.database(promoted).fetchZoneChanges(zone, as: ReplicationWorld.user).token
        promoted.close()

        let old = try Container(path: path)
        await #expect(throws: CumulusError.self) {
            _ = try await ReplicationWorld.database(old).fetchZoneChanges(zone, since: token, as: ReplicationWorld.user)
        }
        #expect(old.supersededBy == 2)
        old.close()
    }

    @Test("epochs only go up, and survive reopening")
    func epochs() throws {
        let path = ReplicationWorld.temporaryPath()
        do {
            let container = try Container(path: path)
            #expect(container.store.epoch == 1)
            try container.store.adoptEpoch(3)
            try container.store.adoptEpoch(2)
            #expect(container.store.epoch == 3)
            #expect(try container.store.promote(applying: container.views.apply) == 4)
            container.close()
        }
        let reopened = try Container(path: path)
        #expect(reopened.store.epoch == 4)
        reopened.close()
    }

    @Test("a follower's directory opened as a leader still refuses writes, until it is promoted")
    func followerDirectoryStaysFenced() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        let path = ReplicationWorld.temporaryPath()
        do {
            let follower = try ReplicationWorld.follower(of: leader, path: path)
            follower.close()
        }
        let zone = ZoneID(zoneName: "Elsewhere", ownerName: ReplicationWorld.user)
        do {
            let opened = try Container(path: path)
            #expect(opened.store.isFollowerDirectory)
            await #expect(throws: CumulusError.self) {
                _ = try await ReplicationWorld.database(opened).saveZones([zone], as: ReplicationWorld.user)
            }
            #expect(try opened.store.promote(applying: opened.views.apply) == 2)
            opened.close()
        }
        let promoted = try Container(path: path)
        #expect(!promoted.store.isFollowerDirectory)
        _ = try await ReplicationWorld.database(promoted).saveZones([zone], as: ReplicationWorld.user)
        #expect(promoted.store.head.sequence == 1)
        promoted.close()
        leader.close()
    }

    @Test("a superseded leader stays fenced after a restart")
    func supersededSurvivesRestart() async throws {
        let path = ReplicationWorld.temporaryPath()
        do {
            let container = try Container(path: path)
            #expect(container.supersede(by: 3))
            container.close()
        }
        let reopened = try Container(path: path)
        #expect(reopened.supersededBy == 3)
        do {
            _ = try await ReplicationWorld.database(reopened).saveZones(
                [ZoneID(zoneName: "Late", ownerName: ReplicationWorld.user)], as: ReplicationWorld.user)
            Issue.record("a superseded leader took a write after a restart")
        } catch let error as CumulusError {
            #expect(error.code == .notLeader)
        }
        reopened.close()
    }

    @Test("a snapshot streams the leader's environment; one at a time, until its copy and its stream are done")
    func oneSnapshotUntilStreamed() async throws {
        let (container, leader) = try await Self.leader()
        var first: SnapshotFile? = try await leader.snapshot()
        // Being written and sent: another copy would double the disk it takes.
        await #expect(throws: ReplicationError.self) { _ = try await leader.snapshot() }
        var bytes: [UInt8] = []
        for try await chunk in try #require(first) { bytes += chunk.readableBytesView }
        // What was sent is the environment: it opens, holding the leader's log.
        let copy = ReplicationWorld.temporaryPath()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: copy + "/snapshot", contents: Data(bytes)))
        try SnapshotLayout.unpack(copy + "/snapshot", into: copy)
        let store = try LogStore(environment: try LMDBEnvironment(path: copy))
        #expect(store.identity == container.store.identity)
        #expect(store.head == container.store.head)
        #expect(try store.verifyChain(from: 1).isIntact)
        // Sent whole, but not yet dropped: still held.
        await #expect(throws: ReplicationError.self) { _ = try await leader.snapshot() }
        let directory = try #require(first?.directory)
        first = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
        _ = try await leader.snapshot()
        container.close()
    }

    @Test("a snapshot dropped before it was sent is released once its copy has ended")
    func droppedSnapshotReleased() async throws {
        let (container, leader) = try await Self.leader()
        var first: SnapshotFile? = try await leader.snapshot()
        let directory = try #require(first?.directory)
        first = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
        // The copy may still be running: the next snapshot is refused until it ends.
        let deadline = ContinuousClock.now + .seconds(30)
        var second: SnapshotFile?
        while second == nil, ContinuousClock.now < deadline {
            do { second = try await leader.snapshot() } catch is ReplicationError { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(second != nil)
        container.close()
    }
}
