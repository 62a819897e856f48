import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation
import Synchronization
import Testing

/// The views environment is committed without fsync (`DataLayout`): these tests hold
/// what opening a data directory does with views that are behind the log, torn by a
/// crash of the machine, or of the one-environment layout.
@Suite("Views recovery")
struct ViewsRecoveryTests {
    static let user = EngineWorld.user

    static func database(_ container: Container) -> Database {
        container.privateDatabase(container: EngineWorld.containerID, user: user)
    }

    /// Saves `names` in zone `Lists` (made if missing) through the writer.
    static func save(_ container: Container, _ names: [String]) async throws {
        let db = database(container)
        let zone = ZoneID(zoneName: "Lists", ownerName: user)
        _ = try await db.saveZones([zone], as: user)
        let records = names.enumerated().map { Record.make("Item", $1, in: zone, ["n": .int64(Int64($0)), "title": .string("item \($1)")]) }
        let result = try await db.modify(saving: records, savePolicy: .allKeys, atomic: true, as: user)
        for save in result.saveResults { _ = try save.result.get() }
    }

    /// The names of the zone's records, read through the views.
    static func names(_ container: Container) throws -> Set<String> {
        let zone = ZoneID(zoneName: "Lists", ownerName: user)
        let ids = (0..<40).map { RecordID(recordName: "r\($0)", zoneID: zone) }
        return Set(try database(container).fetch(ids, as: user).compactMap { try? $0.result.get().recordID.recordName })
    }

    /// Opens the data directory at `path`, saves each batch of names, and closes it.
    static func write(_ path: String, _ batches: [[String]]) async throws {
        let container = try Container(path: path)
        for names in batches { try await save(container, names) }
        container.close()
    }

    @Test("the decision on open: views are trusted after a clean close, in the same boot, or with nothing committed since their sync")
    func verdicts() {
        let boot = [UInt8](repeating: 1, count: 16)
        let other = [UInt8](repeating: 2, count: 16)
        func verdict(_ record: ViewsDurability.Record?, head: UInt64 = 10) -> ViewsDurability.Verdict {
            ViewsDurability.verdict(record: record, boot: boot, logHead: head)
        }
        #expect(verdict(nil) == .trusted)
        #expect(verdict(.init(boot: other, clean: true, synced: 3)) == .trusted)
        #expect(verdict(.init(boot: boot, clean: false, synced: 3)) == .trusted)
        #expect(verdict(.init(boot: other, clean: false, synced: 10)) == .trusted)
        #expect(verdict(.init(boot: other, clean: false, synced: 9)) == .torn)
        #expect(verdict(.init(boot: other, clean: false, synced: 10), head: 11) == .torn)
        let record = ViewsDurability.Record(boot: other, clean: true, synced: 1 << 40)
        #expect(ViewsDurability.Record(record.bytes) == record)
        #expect(ViewsDurability.Record(Array(record.bytes.dropLast())) == nil)
    }

    @Test("views behind the log catch up on open through the one apply, and equal a rebuild")
    func viewsBehindCatchUp() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        try await Self.write(path, [(0..<10).map { "r\($0)" }])
        // The views as they were after the first ten: what a lost views commit leaves.
        let early = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        let head: UInt64
        do {
            let container = try Container(path: path)
            try await Self.save(container, (10..<20).map { "r\($0)" })
            head = container.store.head.sequence
            container.close()
        }
        try early.write(to: URL(fileURLWithPath: path + "/data.mdb"))
        let caught = Mutex<[UInt64]>([])
        let container = try Container(path: path, catchUpObserver: { sequence in caught.withLock { $0.append(sequence) } })
        defer { container.close() }
        #expect(container.viewsRemade == false)
        #expect(caught.withLock { $0 } == [head])
        #expect(try container.store.appliedHead() == container.store.head)
        #expect(try Self.names(container) == Set((0..<20).map { "r\($0)" }))
        #expect(try container.verify().isHealthy)
        // The writer goes on from the head.
        try await Self.save(container, ["r20"])
        #expect(try Self.names(container).contains("r20"))
    }

    @Test("views of another log are refused when they would catch up, not applied on top")
    func viewsOfAnotherLogRefused() async throws {
        let (temporary, otherTemporary) = (TemporaryDirectory(), TemporaryDirectory())
        defer {
            temporary.remove()
            otherTemporary.remove()
        }
        let (path, other) = (temporary.path, otherTemporary.path)
        try await Self.write(path, [["r1"], ["r2"]])
        try await Self.write(other, [["r3"]])
        // The other directory's views: behind this log, and of another chain.
        try FileManager.default.removeItem(atPath: path + "/data.mdb")
        try FileManager.default.copyItem(atPath: other + "/data.mdb", toPath: path + "/data.mdb")
        #expect {
            _ = try Container(path: path)
        } throws: { error in
            "\(error)".contains("chain hash does not follow")
        }
    }

    @Test("a crash of the machine: torn views are never opened but remade from the whole log")
    func tornViewsRemade() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        try await Self.write(path, [(0..<15).map { "r\($0)" }])
        try MachineCrash.simulate(dataDirectory: path, synced: 1)
        let container = try Container(path: path)
        defer { container.close() }
        #expect(container.viewsRemade)
        #expect(try Self.names(container) == Set((0..<15).map { "r\($0)" }))
        #expect(try container.verify().isHealthy)
        // The record now names this boot: a restart opens the views as they are.
        #expect(try container.store.viewsRecord()?.boot == ViewsDurability.currentBoot)
    }

    @Test("a crash of the machine with a truncated log: the torn views are left unopened and the open refused, saying why")
    func tornViewsTruncatedLog() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        do {
            let container = try Container(path: path)
            for batch in 0..<4 { try await Self.save(container, (batch * 5..<batch * 5 + 5).map { "r\($0)" }) }
            #expect(try container.store.dropCommits(through: 3, limit: 100) > 0)
            container.close()
        }
        let garbage = try MachineCrash.simulate(dataDirectory: path, synced: 2)
        #expect {
            _ = try Container(path: path)
        } throws: { error in
            "\(error)".contains("restore the directory from a backup") && "\(error)".contains("--reseed")
        }
        // Nothing touched the torn file: it is still there, byte for byte.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == garbage)
    }

    @Test("a crash of the machine with a log truncated up to the last views snapshot: the torn views are replaced by the snapshot, unopened, and caught up from the log to what they were")
    func tornViewsRestoredFromSnapshot() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        let snapshot: LogHead
        let before: [ViewDigest]
        do {
            let container = try Container(path: path)
            for batch in 0..<2 { try await Self.save(container, (batch * 5..<batch * 5 + 5).map { "r\($0)" }) }
            snapshot = try container.store.takeViewsSnapshot()
            #expect(snapshot == container.store.head)
            for batch in 2..<4 { try await Self.save(container, (batch * 5..<batch * 5 + 5).map { "r\($0)" }) }
            #expect(try container.store.dropCommits(through: snapshot.sequence, limit: 100) > 0)
            before = try container.viewDigests()
            container.close()
        }
        let garbage = try MachineCrash.simulate(dataDirectory: path, synced: snapshot.sequence - 1)
        let container = try Container(path: path)
        defer { container.close() }
        // The garbage was never opened (LMDB would have refused it): the snapshot took its place.
        #expect(container.openedViews == .restored(sequence: snapshot.sequence))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) != garbage)
        #expect(try container.store.appliedHead() == container.store.head)
        #expect(try Self.names(container) == Set((0..<20).map { "r\($0)" }))
        #expect(try container.viewDigests() == before, "the views are what they were before the crash")
        // The snapshot stays for the next recovery.
        #expect(try container.store.viewsSnapshot() == snapshot)
    }

    @Test("a crash of the machine with a log truncated past the last views snapshot: the open is refused, naming the snapshot")
    func tornViewsSnapshotTooOld() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        do {
            let container = try Container(path: path)
            try await Self.save(container, ["r0"])
            let snapshot = try container.store.takeViewsSnapshot()
            for index in 1..<4 { try await Self.save(container, ["r\(index)"]) }
            #expect(try container.store.dropCommits(through: snapshot.sequence + 2, limit: 100) > 0)
            container.close()
        }
        let garbage = try MachineCrash.simulate(dataDirectory: path, synced: 1)
        #expect {
            _ = try Container(path: path)
        } throws: { error in
            "\(error)".contains("its last views snapshot") && "\(error)".contains("restore the directory from a backup")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == garbage)
    }

    @Test("a second views snapshot of the same commit keeps the first in place, so the record never names a missing file")
    func snapshotOfTheSameCommitKeepsTheFirst() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        let container = try Container(path: path)
        defer { container.close() }
        try await Self.save(container, ["r0"])
        let first = try container.store.takeViewsSnapshot()
        let directory = try #require(
            try FileManager.default.contentsOfDirectory(atPath: ViewsSnapshot.directory(ofData: path)).first)
        let file = ViewsSnapshot.directory(ofData: path) + "/" + directory + "/data.mdb"
        let inode = try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int
        #expect(try container.store.takeViewsSnapshot() == first)
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? Int == inode)
        #expect(try FileManager.default.contentsOfDirectory(atPath: ViewsSnapshot.directory(ofData: path)) == [directory])
        #expect(try container.store.viewsSnapshot() == first)
    }


    @Test("a data directory written by main before the log had its own environment is upgraded on open, and verifies")
    func upgradesFormat1() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path
        // Written by `cumulus serve` at 9837666: a zone, a folder and 30 notes
        // referring to it, 5 edits, one delete (Tests/Fixtures).
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/format1-main-9837666.mdb.zst")
        let compressed = try [UInt8](Data(contentsOf: fixture))
        let bytes = try ZstdDecompressor().decompress(compressed, dictionary: nil, maxOutputSize: 16 << 20)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        let owner = "_a97729f4b490c7a0041933bdd06cb8f5"
        let zone = ZoneID(zoneName: "Notes", ownerName: owner)
        for _ in 0..<2 {  // the second open finds it upgraded already
            let container = try Container(path: path)
            defer { container.close() }
            #expect(container.store.head.sequence == 8)
            #expect(try container.store.appliedHead() == container.store.head)
            #expect(try container.verify().isHealthy)
            let db = container.privateDatabase(container: "iCloud.com.example.cumulus", user: owner)
            let ids = (0..<30).map { RecordID(recordName: "note-\($0)", zoneID: zone) }
            let fetched = try db.fetch(ids, as: owner).compactMap { try? $0.result.get() }
            #expect(fetched.count == 29)
            #expect(fetched.first { $0.recordID.recordName == "note-3" }?["title"] == .string("edited 3"))
            #expect(try container.store.recordHistory(db.id, RecordID(recordName: "note-3", zoneID: zone)).count == 2)
        }
        #expect(FileManager.default.fileExists(atPath: DataLayout.logPath(path) + "/data.mdb"))
    }
}
