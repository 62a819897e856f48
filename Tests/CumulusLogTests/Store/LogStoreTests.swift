import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

@Suite("Log store")
struct LogStoreTests {
    @Test("appended commits read back exactly, with gapless sequences")
    func appendAndRead() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 1)
        let requests = (0..<50).map { sampleRequest($0, rng: &rng) }
        let commits = try appendDirect(store, requests)
        #expect(commits.map(\.sequence) == Array(1...50))
        #expect(store.head.sequence == 50)
        for commit in commits {
            #expect(try store.read(commit.sequence) == commit)
        }
        #expect(try store.read(51) == nil)
        #expect(try store.range(from: 10, through: 19).map(\.sequence) == Array(10...19))
        #expect(try store.verifyChain().isIntact)
    }

    @Test("the log survives a clean reopen: same ID, head and commits")
    func reopenAfterCleanShutdown() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var rng = SeededRandom(seed: 2)
        let (logID, head, commits) = try {
            let store = try openStore(dir)
            let commits = try appendDirect(store, (0..<20).map { sampleRequest($0, rng: &rng) })
            return (store.logID, store.head, commits)
        }()
        let reopened = try openStore(dir)
        #expect(reopened.logID == logID)
        #expect(reopened.head == head)
        #expect(try reopened.range(from: 1) == commits)
        let more = try appendDirect(reopened, [sampleRequest(99, rng: &rng)])
        #expect(more[0].sequence == 21)
        #expect(try reopened.verifyChain().isIntact)
    }

    @Test("flipping one byte of a stored frame: verifyChain names it, reading it fails clearly")
    func flippedByteIsNamed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 3)
        try appendDirect(store, (0..<30).map { sampleRequest($0, rng: &rng) })
        guard let original = try store.frameBytes(17) else {
            Issue.record("frame 17 missing")
            return
        }
        let log = try store.logEnvironment.table("log")
        for index in [0, 5, 20, original.count / 2, original.count - 1] {
            var damaged = original
            damaged[index] ^= 0x10
            try store.logEnvironment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(17)), value: damaged) }
            let report = try store.verifyChain()
            #expect(report.firstBad == 17, "byte \(index): \(report)")
            #expect(report.verified == 16)
            #expect(throws: LogError.self) { try store.read(17) }
            #expect(try store.read(16) != nil)
        }
        try store.logEnvironment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(17)), value: original) }
        #expect(try store.verifyChain().isIntact)
    }

    @Test("a forged frame with a valid checksum breaks the chain at its sequence")
    func forgedFrameBreaksChain() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 4)
        try appendDirect(store, (0..<10).map { sampleRequest($0, rng: &rng) })
        guard let bytes = try store.frameBytes(5) else { return }
        var frame = try Frame(parsing: bytes, expectedSequence: 5)
        frame.chainHash[0] ^= 1
        let log = try store.logEnvironment.table("log")
        try store.logEnvironment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(5)), value: frame.encoded()) }
        let report = try store.verifyChain()
        #expect(report.firstBad == 5)
        // Starting later, the first frame is checked against its predecessor's stored hash.
        #expect(try store.verifyChain(from: 6).firstBad == 6)
        #expect(try store.verifyChain(from: 7).isIntact)
    }

    @Test("a missing commit is named by verifyChain")
    func gapIsNamed() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 5)
        try appendDirect(store, (0..<10).map { sampleRequest($0, rng: &rng) })
        let log = try store.logEnvironment.table("log")
        try store.logEnvironment.write { txn in _ = try txn.delete(log, key: BigEndian.bytes(UInt64(4))) }
        #expect(try store.verifyChain().firstBad == 4)
    }

    @Test("writes continue past a tiny initial map size")
    func growsPastInitialMap() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var rng = SeededRandom(seed: 6)
        let store = try openStore(dir, mapSize: 256 << 10)
        var big = RandomRecords(seed: 6)
        var total = 0
        for batch in 0..<40 {
            var requests: [CommitRequest] = []
            for index in 0..<10 {
                var record = SampleData.todoItem(batch * 10 + index, rng: &rng)
                // Incompressible bytes so the log really grows.
                record["blob"] = .bytes((0..<40_000).map { _ in UInt8(big.int(0...255)) })
                requests.append(CommitRequest(
                    actor: "u", requestID: "r\(batch)-\(index)",
                    events: [.recordSaved(database: SampleData.database, record: record, changedKeys: ["blob"])]))
            }
            total += try appendDirect(store, requests).count
        }
        #expect(total == 400)
        #expect(try store.logEnvironment.info().mapSize > 256 << 10)
        #expect(try store.verifyChain().verified == 400)
    }

    @Test("a reader keeps its snapshot while a writer commits")
    func readersSeeSnapshots() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 7)
        try appendDirect(store, (0..<5).map { sampleRequest($0, rng: &rng) })
        let more = (5..<10).map { sampleRequest($0, rng: &rng) }
        let log = try store.logEnvironment.table("log")
        try store.logEnvironment.read { (txn: LMDBReadTransaction) throws in
            #expect(try txn.count(log) == 5)
            // Commit from another thread while this snapshot is open.
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                _ = try? appendDirect(store, more)
                done.signal()
            }
            thread.start()
            done.wait()
            #expect(try txn.count(log) == 5)
        }
        #expect(try store.lastSequence() == 10)
    }

    @Test("tail yields stored commits, then wakes on a new one")
    func tailWakesOnCommit() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 8)
        try appendDirect(store, (0..<3).map { sampleRequest($0, rng: &rng) })
        let later = sampleRequest(3, rng: &rng)
        let reader = Task {
            var seen: [UInt64] = []
            for try await commit in store.tail(from: 2) {
                seen.append(commit.sequence)
                if seen.count == 3 { break }
            }
            return seen
        }
        try await Task.sleep(for: .milliseconds(50))
        try appendDirect(store, [later])
        #expect(try await reader.value == [2, 3, 4])
    }

    @Test("a cancelled tail stops waiting")
    func tailCancellation() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let reader = Task {
            var count = 0
            for try await _ in store.tail(from: 1) { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))
        reader.cancel()
        #expect(try await reader.value == 0)
    }

    @Test("zone and database feeds list each commit's changes in order")
    func feedIndexes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let db = SampleData.database
        let zone = SampleData.zone
        let other = ZoneID(zoneName: "Other", ownerName: zone.ownerName)
        let a = Record(recordType: "T", recordID: RecordID(recordName: "a", zoneID: zone))
        let b = Record(recordType: "T", recordID: RecordID(recordName: "b", zoneID: other))
        try appendDirect(store, [
            CommitRequest(actor: "u", requestID: "1", events: [.zoneSaved(database: db, zone: Zone(zoneID: zone))]),
            CommitRequest(actor: "u", requestID: "2", events: [
                .recordSaved(database: db, record: a, changedKeys: []),
                .recordSaved(database: db, record: b, changedKeys: []),
            ]),
            CommitRequest(actor: "u", requestID: "3", events: [
                .recordDeleted(database: db, recordID: a.recordID, recordType: "T", cause: .direct),
                .subscriptionSaved(database: db, subscriptionID: "s", definition: []),
            ]),
            CommitRequest(actor: "u", requestID: "4", events: [.zoneDeleted(database: db, zoneID: other)]),
        ])
        let zoneFeed = try store.zoneFeed(db, zone, after: 0)
        #expect(zoneFeed.map(\.zoneSequence) == [1, 2, 3])
        #expect(zoneFeed.map(\.sequence) == [1, 2, 3])
        #expect(zoneFeed[1].changes == [.saved(recordName: "a")])
        #expect(zoneFeed[2].changes == [.deleted(recordName: "a")])
        #expect(try store.zoneFeed(db, zone, after: 1, limit: 1).map(\.zoneSequence) == [2])
        let otherFeed = try store.zoneFeed(db, other, after: 0)
        #expect(otherFeed.map(\.sequence) == [2, 4])
        #expect(otherFeed[1].changes == [.zoneDeleted])
        let databaseFeed = try store.databaseFeed(db, after: 0)
        #expect(databaseFeed.map(\.databaseSequence) == [1, 2, 3, 4])
        #expect(databaseFeed[1].changes == [.zoneChanged(zone), .zoneChanged(other)])
        #expect(databaseFeed[2].changes.contains(.databaseChanged))
        #expect(databaseFeed[3].changes == [.zoneDeleted(other)])
        let commit = try store.read(2)
        // Zones in a commit are ordered by name: "Lists" (its 2nd commit), then "Other" (its 1st).
        #expect(commit?.zoneSequences.map(\.sequence) == [2, 1])
    }

    @Test("feed heads a transaction advances are stored when it finishes, and the next continues from them")
    func feedHeadsAcrossTransactions() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 12)
        let db = SampleData.database
        func heads() throws -> (zone: UInt64, database: UInt64) {
            try store.environment.read { txn in
                (try store.zoneHead(db, SampleData.zone, in: txn), try store.databaseHead(db, in: txn))
            }
        }
        #expect(try heads() == (0, 0))
        let first = try appendDirect(store, (0..<30).map { sampleRequest($0, rng: &rng) })
        #expect(first.map { $0.zoneSequences.map(\.sequence) } == (1...30).map { [UInt64($0)] })
        #expect(try heads() == (30, 30))
        let second = try appendDirect(store, (30..<35).map { sampleRequest($0, rng: &rng) })
        #expect(second.map { $0.databaseSequences.map(\.sequence) } == (31...35).map { [UInt64($0)] })
        #expect(try heads() == (35, 35))
    }

    @Test("a follower appending the leader's frames ends with an identical log")
    func replicatedFramesMatch() throws {
        let logs = try LeaderAndFollower(seed: 9, commits: 40)
        defer { logs.cleanup() }
        let (leader, follower) = (logs.leader, logs.follower)
        let frames = try (1...40).compactMap { try leader.frameBytes(UInt64($0)) }
        let (_, outcome) = try follower.appendWrite(catchUp: LogStore.withoutViews) { txn -> ((), AppendSession.Outcome) in
            var session = try follower.beginAppend(in: txn)
            for frame in frames { _ = try session.appendFrame(frame, in: txn) }
            return ((), try session.finish(in: txn))
        }
        follower.didCommit(outcome)
        #expect(follower.head == leader.head)
        #expect(try follower.range(from: 1) == leader.range(from: 1))
        #expect(try follower.zoneFeed(SampleData.database, SampleData.zone, after: 0)
            == leader.zoneFeed(SampleData.database, SampleData.zone, after: 0))
    }

    @Test("a follower refuses a frame out of order or not chained to its head")
    func followerRefusesForeignFrames() throws {
        let logs = try ForeignLogs(seed: 10)
        defer { logs.cleanup() }
        let (leader, other, follower) = (logs.leader, logs.other, logs.follower)
        func offer(_ frame: [UInt8]?) throws {
            guard let frame else { throw LogError.missing(sequence: 0) }
            let (_, outcome) = try follower.appendWrite(catchUp: LogStore.withoutViews) { txn -> ((), AppendSession.Outcome) in
                var session = try follower.beginAppend(in: txn)
                _ = try session.appendFrame(frame, in: txn)
                return ((), try session.finish(in: txn))
            }
            follower.didCommit(outcome)
        }
        #expect(throws: LogError.self) { try offer(leader.frameBytes(2)) }
        try offer(leader.frameBytes(1))
        #expect(throws: LogError.self) { try offer(other.frameBytes(2)) }
        #expect(try follower.lastSequence() == 1)
        #expect(try follower.verifyChain().isIntact)
    }
}
