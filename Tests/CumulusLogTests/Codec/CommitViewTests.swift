import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

@Suite("Commit views")
struct CommitViewTests {
    @Test("a view's header is the commit's, and its commit is the decoded one")
    func headerMatchesCommit() throws {
        var random = RandomRecords(seed: 7)
        for index in 0..<1_000 {
            var commit = random.commit(sequence: UInt64(index + 1))
            commit.events = commit.events.map(\.canonical)
            if index % 3 == 0 { commit.actor = "_ü\(index)" }
            if index % 4 == 0 { commit.clientChangeTokenData = [UInt8(index % 256), 0, 7] }
            let bytes = try CommitCodec.encode(commit)
            try bytes.withUnsafeBytes { buffer in
                let view = try CommitView(parsing: buffer)
                #expect(view.sequence == commit.sequence)
                #expect(view.timestamp == commit.timestamp)
                #expect(view.actor == commit.actor)
                #expect(view.requestID == commit.requestID)
                #expect(view.clientChangeTokenData == commit.clientChangeTokenData)
                #expect(view.eventCount == commit.events.count)
                #expect(view.isActor(commit.actor))
                #expect(!view.isActor(commit.actor + "x"))
                #expect(!view.isActor(String(commit.actor.dropLast())) || commit.actor.isEmpty)
                #expect(try view.commit() == commit)
            }
        }
    }

    @Test("a damaged header is refused when parsed, damaged events only when decoded")
    func damageIsFoundWhereItIs() throws {
        var random = RandomRecords(seed: 8)
        var commit = random.commit(sequence: 41)
        commit.events = commit.events.map(\.canonical)
        let bytes = try CommitCodec.encode(commit)
        // The header ends where the first event begins: the same commit without events
        // or positions is the header and three zero counts (each one byte, as is this
        // commit's event count). A cut after the header still parses as a view, and
        // its commit is refused, naming the sequence.
        var headerOnly = commit
        (headerOnly.events, headerOnly.zoneSequences, headerOnly.databaseSequences) = ([], [], [])
        let eventsStart = try CommitCodec.encode(headerOnly).count - 2
        #expect(commit.clientChangeTokenData == nil && commit.events.count < 128)
        let actorStart = try #require(bytes.firstRange(of: Array(commit.actor.utf8))?.lowerBound)
        #expect(!commit.actor.isEmpty)
        // The view checks only that the bytes left could hold the events (one byte each).
        let cut = eventsStart + commit.events.count + 3
        #expect(bytes.count > cut + 16)
        try Array(bytes.prefix(cut)).withUnsafeBytes { buffer in
            let view = try CommitView(parsing: buffer)
            #expect(view.sequence == 41)
            do {
                _ = try view.commit()
                Issue.record("a cut commit decoded")
            } catch {
                guard case .corruptFrame(41, _)? = error as? LogError else {
                    Issue.record("\(error)")
                    return
                }
            }
        }
        var badFormat = bytes
        badFormat[0] = 2
        var badFlag = bytes
        badFlag[eventsStart - 2] = 9
        var badUTF8 = bytes
        badUTF8[actorStart] = 0xFF
        for damaged in [badFormat, badFlag, badUTF8, Array(bytes.prefix(eventsStart - 1))] {
            damaged.withUnsafeBytes { buffer -> Void in
                #expect(throws: CumulusError.self) { try CommitView(parsing: buffer) }
            }
        }
    }

    @Test("20,000 damaged encodings: a view and its commit fail exactly where a whole decode does")
    func agreesWithWholeDecode() throws {
        try forEachDamagedCommit(seed: 9, count: 20_000) { round, bytes in
            let whole = try? CommitCodec.decode(bytes)
            let viewed = bytes.withUnsafeBytes { buffer -> Commit? in
                guard let view = try? CommitView(parsing: buffer) else { return nil }
                return try? view.commit()
            }
            #expect(viewed == whole, "round \(round)")
            return viewed == whole
        }
    }

    @Test("a store's views are its commits; what the reader throws passes through unchanged")
    func storeViews() throws {
        struct Stop: Error, Equatable { let at: UInt64 }
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var rng = SeededRandom(seed: 10)
        let commits = try appendDirect(store, (0..<40).map { sampleRequest($0, rng: &rng) })
        var seen: [Commit] = []
        try store.commitViews(from: 5, through: 30) { view in
            #expect(view.actor == commits[Int(view.sequence) - 1].actor)
            seen.append(try view.commit())
            return true
        }
        #expect(seen == Array(commits[4..<30]))
        #expect(throws: Stop(at: 12)) {
            try store.commitViews(from: 1) { view in
                if view.sequence == 12 { throw Stop(at: 12) }
                return true
            }
        }
        var hashes: [UInt64: [UInt8]] = [:]
        try store.commitViewsWithHashes(from: 3, through: 6) { view, hash, previous in
            hashes[view.sequence] = hash
            if let before = hashes[view.sequence - 1] { #expect(previous == before) }
            return true
        }
        #expect(hashes.keys.sorted() == [3, 4, 5, 6])
        // A damaged stored frame is the frame's error, not the reader's.
        guard var damaged = try store.frameBytes(9) else {
            Issue.record("frame 9 missing")
            return
        }
        damaged[damaged.count / 2] ^= 0x40
        let log = try store.logEnvironment.table("log")
        try store.logEnvironment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(9)), value: damaged) }
        #expect(throws: LogError.self) { try store.commitViews(from: 1) { _ in true } }
    }
}
