import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusTools
import CumulusViews
import Foundation
import Testing

@Suite("Time travel")
struct ReplayTests {
    /// A world with a little history: a zone, saves, an update, a cascade.
    static func populated() async throws -> (ToolWorld, ZoneID) {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("TodoList", "home", in: zone, ["title": .string("Home")])])
        try await world.save((0..<5).map {
            Record.make("TodoItem", "task\($0)", in: zone, ["title": .string("task \($0)"), "list": ref("home", in: zone, .deleteSelf)])
        })
        return (world, zone)
    }

    @Test("replay --at N holds exactly the state captured right after commit N, and serves it read-only")
    func replayEqualsCapturedState() async throws {
        let (world, zone) = try await Self.populated()
        let point = world.head
        let captured = try world.digests()
        let task2 = try #require(try world.current(RecordID(recordName: "task2", zoneID: zone)))
        // Later history that the replay must not contain.
        var changed = task2
        changed["title"] = .string("changed later")
        try await world.save([changed])
        try await world.delete([RecordID(recordName: "home", zoneID: zone)])
        #expect(try world.current(task2.recordID) == nil)

        let out = world.scratch("replay")
        let result = try Replayer.replay(world.store, through: point, to: out)
        #expect(result.sequence == point)

        let container = try Container(path: out, environmentOptions: LMDBEnvironment.Options(mapSize: 1 << 30, readOnly: true))
        defer { container.close() }
        let replayed = try container.store.environment.read { txn in
            try container.views.digests(in: txn)
        }
        #expect(replayed == captured)
        #expect(container.store.logID == world.store.logID)
        #expect(container.store.epoch == world.store.epoch)
        #expect(container.store.head.sequence == point)
        #expect(try container.store.chainHash(at: point) == world.store.chainHash(at: point))
        #expect(try container.store.verifyChain().isIntact)
        #expect(try Replayer.replayedThrough(container.store) == point)
        // Reads through the engine see the old state; writes are refused.
        let db = container.privateDatabase(container: ToolWorld.containerID, user: ToolWorld.user)
        #expect(try db.fetch(task2.recordID, as: ToolWorld.user) == task2)
        let page = try db.query(
            PredicateParser.query(recordType: "TodoItem", predicate: "TRUEPREDICATE"), in: zone, as: ToolWorld.user)
        #expect(page.records.count == 5)
        await #expect(throws: (any Error).self) {
            _ = try await db.modify(saving: [Record.make("TodoItem", "new", in: zone)], savePolicy: .allKeys, as: ToolWorld.user)
        }
    }

    @Test("a replayed copy whose views an older build laid out is refused read-only, with replay as the remedy")
    func olderReplayedCopyRefused() async throws {
        let (world, _) = try await Self.populated()
        let out = world.scratch("replay-old")
        _ = try Replayer.replay(world.store, through: world.head, to: out)
        // Make the copy look as an older build left it (its file is 0444: opened
        // writable here only to set the layout byte back).
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: out + "/data.mdb")
        do {
            let environment = try LMDBEnvironment(path: out, options: LMDBEnvironment.Options(mapSize: 1 << 30))
            let meta = try DataLayout.open(.viewsState, in: environment)
            try environment.write { txn in try txn.put(meta, key: Array("viewsFormat".utf8), value: [2]) }
        }
        do {
            let container = try Container(path: out, environmentOptions: LMDBEnvironment.Options(mapSize: 1 << 30, readOnly: true))
            container.close()
            Issue.record("a read-only open of a replayed copy with format-2 views must be refused")
        } catch let error as StorageError {
            #expect(error.description.contains("layout 2"))
            #expect(error.description.contains("replay it again"))
        }
    }

    @Test("a time names the last commit at or before it; a time before the log is 0")
    func timesResolveToSequences() async throws {
        let (world, _) = try await Self.populated()
        let head = world.head
        for sequence in 1...head {
            let commit = try #require(try world.store.read(sequence))
            let resolved = try PointInTime.time(commit.timestamp).resolve(in: world.store)
            #expect(resolved >= sequence)
            #expect(try #require(try world.store.read(resolved)).timestamp == commit.timestamp)
            if resolved < head { #expect(try #require(try world.store.read(resolved + 1)).timestamp > commit.timestamp) }
        }
        let first = try #require(try world.store.read(1))
        let before = Timestamp(millisecondsSince1970: first.timestamp.millisecondsSince1970 - 1)
        #expect(try PointInTime.time(before).resolve(in: world.store) == 0)
        #expect(try PointInTime(parsing: "7") == .sequence(7))
        #expect(try PointInTime(parsing: "2026-11-22T03:23:14.123Z") == .time(Timestamp(millisecondsSince1970: 1_795_317_794_123)))
    }

    @Test("in a log that dropped its first commits, a time before what is kept is refused, and a replay says why")
    func truncatedLogReachesOnlyWhatIsKept() async throws {
        let (world, _) = try await Self.populated()
        let second = try #require(try world.store.read(2))
        try world.store.dropCommits(through: 1, limit: 10)
        #expect(try PointInTime.time(second.timestamp).resolve(in: world.store) >= 2)
        let before = Timestamp(millisecondsSince1970: second.timestamp.millisecondsSince1970 - 1)
        let refused = cumulusError { _ = try PointInTime.time(before).resolve(in: world.store) }
        #expect(refused?.code == .invalidArguments)
        #expect(refused?.message.contains("retention") == true, "\(String(describing: refused))")
        #expect(throws: LogError.truncated(sequence: 1, firstRetained: 2)) {
            try Replayer.replay(world.store, through: world.head, to: world.scratch("replay"))
        }
    }

    @Test("bad points and bad output directories are invalidArguments, not crashes")
    func badInputIsRefused() async throws {
        let (world, _) = try await Self.populated()
        #expect(cumulusError { _ = try PointInTime(parsing: "yesterday-ish") }?.code == .invalidArguments)
        #expect(cumulusError { _ = try PointInTime(parsing: "99999999999999999999999") }?.code == .invalidArguments)
        #expect(cumulusError { _ = try PointInTime.sequence(world.head + 1).resolve(in: world.store) }?.code == .invalidArguments)
        #expect(cumulusError { try Replayer.replay(world.store, through: world.head + 5, to: world.scratch("x")) }?.code == .invalidArguments)
        let occupied = world.scratch("occupied")
        try FileManager.default.createDirectory(atPath: occupied, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: occupied + "/something", contents: Data())
        #expect(cumulusError { try Replayer.replay(world.store, through: 1, to: occupied) }?.code == .invalidArguments)
    }

    @Test("show --at gives one record as it was at that point")
    func showAtGivesTheRecordAsItWas() async throws {
        let (world, zone) = try await Self.populated()
        let id = RecordID(recordName: "task1", zoneID: zone)
        let before = world.head
        let original = try #require(try world.current(id))
        var edited = original
        edited["title"] = .string("edited")
        try await world.save([edited])
        try await world.delete([id])
        let location = world.location("task1", in: zone)
        #expect(try RecordHistory.load(location, in: world.store, through: before).state == original)
        #expect(try RecordHistory.load(location, in: world.store, through: before + 1).state?["title"] == .string("edited"))
        #expect(try RecordHistory.load(location, in: world.store).state == nil)
        #expect(try RecordHistory.load(location, in: world.store, through: 1).versions.isEmpty)
    }
}
