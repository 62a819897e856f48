import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Testing

@Suite("Frames decoded ahead")
struct FrameDecoderTests {
    /// A leader's log of `count` sample saves with a dictionary installed after the
    /// first half, so the second half's frames need it.
    static func leaderWithDictionary(_ dir: TemporaryDirectory, count: Int = 40) throws -> LogStore {
        let leader = try openStore(dir)
        var rng = SeededRandom(seed: 31)
        let requests = (0..<count).map { sampleRequest($0, rng: &rng) }
        try appendDirect(leader, Array(requests.prefix(count / 2)))
        var sampleRNG = SeededRandom(seed: 34)
        let dictionary = try ZstdDictionary.train(
            samples: try (0..<400).map { index in
                let request = sampleRequest(index, rng: &sampleRNG)
                return try CommitCodec.encode(Commit(
                    sequence: UInt64(index + 1), timestamp: Timestamp(millisecondsSince1970: 0), actor: request.actor,
                    requestID: request.requestID, clientChangeTokenData: nil, events: request.events, zoneSequences: [],
                    databaseSequences: []))
            },
            capacity: 4 << 10)
        try appendDirect(leader, [CommitRequest(
            actor: "", requestID: "dictionary", events: [.dictionaryInstalled(id: dictionary.id, bytes: dictionary.bytes)])])
        try appendDirect(leader, Array(requests.suffix(count - count / 2)))
        return leader
    }

    @Test("frames decoded ahead, across a dictionary the same run installs, append as the frames themselves do")
    func decodedAheadAppendsTheSame() throws {
        let leaderDir = TemporaryDirectory("leader")
        let inlineDir = TemporaryDirectory("inline")
        let aheadDir = TemporaryDirectory("ahead")
        defer { leaderDir.remove(); inlineDir.remove(); aheadDir.remove() }
        let leader = try Self.leaderWithDictionary(leaderDir)
        let frames = try leader.rawFrames(from: 1, limit: .max, maxBytes: .max)
        #expect(try frames.contains { try Frame(parsing: $0, expectedSequence: nil).dictionaryID != 0 })

        let inline = try openStore(inlineDir)
        inline.didCommit(try inline.appendFrames(frames, applying: nil).outcome)

        let ahead = try openStore(aheadDir)
        // The follower's own log knows no dictionary yet: the decoder learns it from the run.
        var decoder = FrameDecoder(store: ahead)
        let decoded = frames.map { decoder.decode($0) }
        #expect(decoded.allSatisfy { $0 != nil })
        var seen: [Int] = []
        let appended = try ahead.appendFrames(frames, decoded: decoded) { index, commit, _ in
            seen.append(index)
            #expect(commit == decoded[index]?.commit)
        }
        ahead.didCommit(appended.outcome)
        #expect(seen == Array(frames.indices))
        #expect(ahead.head == leader.head)
        #expect(ahead.head == inline.head)
        #expect(try ahead.range(from: 1) == leader.range(from: 1))
        #expect(try ahead.rawFrames(from: 1, limit: .max, maxBytes: .max) == frames)
        #expect(try ahead.verifyChain().isIntact)
    }

    @Test("commits of many events, zones and databases, decoded ahead, leave the feeds and record history an inline append leaves")
    func decodedAheadIndexesTheSame() throws {
        let dirs = [TemporaryDirectory("leader"), TemporaryDirectory("inline"), TemporaryDirectory("ahead")]
        defer { dirs.forEach { $0.remove() } }
        let leader = try openStore(dirs[0])
        var random = RandomRecords(seed: 35)
        let requests = (0..<80).map { index in
            // The events of a log's own (dictionaries and epochs) are tested above and in the log's tests.
            let events = (0..<random.int(1...8)).map { _ in random.event() }.filter {
                switch $0 {
                case .dictionaryInstalled, .epochBegan: false
                default: true
                }
            }
            return CommitRequest(actor: "_actor", requestID: "r\(index)", events: events)
        }
        let commits = try appendDirect(leader, requests)
        // A few commits of one zone, so its feed has several positions.
        let zoned = try #require(requests.flatMap(\.events).first { $0.database != nil && $0.zoneID != nil })
        let repeated = try appendDirect(leader, (0..<5).map { _ in CommitRequest(actor: "_a", requestID: "z", events: [zoned]) })
        let frames = try leader.rawFrames(from: 1, limit: .max, maxBytes: .max)

        let inline = try openStore(dirs[1])
        inline.didCommit(try inline.appendFrames(frames, applying: nil).outcome)
        let ahead = try openStore(dirs[2])
        var decoder = FrameDecoder(store: ahead)
        let decoded = frames.map { decoder.decode($0) }
        #expect(decoded.allSatisfy { $0 != nil })
        ahead.didCommit(try ahead.appendFrames(frames, decoded: decoded) { _, _, _ in }.outcome)

        var zones = 0, databases = 0, records = 0
        for commit in commits + repeated {
            for position in commit.zoneSequences {
                zones += 1
                let feed = try leader.zoneFeed(position.database, position.zoneID, after: 0)
                #expect(feed.contains { $0.sequence == commit.sequence && $0.zoneSequence == position.sequence })
                #expect(try inline.zoneFeed(position.database, position.zoneID, after: 0) == feed)
                #expect(try ahead.zoneFeed(position.database, position.zoneID, after: 0) == feed)
                let history = try leader.zoneHistory(position.database, position.zoneID)
                #expect(try ahead.zoneHistory(position.database, position.zoneID) == history)
            }
            for position in commit.databaseSequences {
                databases += 1
                let feed = try leader.databaseFeed(position.database, after: 0)
                #expect(feed.contains { $0.sequence == commit.sequence && $0.databaseSequence == position.sequence })
                #expect(try inline.databaseFeed(position.database, after: 0) == feed)
                #expect(try ahead.databaseFeed(position.database, after: 0) == feed)
            }
            for event in commit.events {
                guard let database = event.database, let recordID = event.recordID else { continue }
                records += 1
                let history = try leader.recordHistory(database, recordID)
                #expect(history.contains { $0.sequence == commit.sequence })
                #expect(try inline.recordHistory(database, recordID) == history)
                #expect(try ahead.recordHistory(database, recordID) == history)
            }
        }
        #expect(zones > 80 && databases > 80 && records > 80, "\(zones) zones, \(databases) databases, \(records) records")
        let zonedFeed = try ahead.zoneFeed(try #require(zoned.database), try #require(zoned.zoneID), after: 0)
        #expect(zonedFeed.count >= 6 && zonedFeed.map(\.zoneSequence) == Array(1...UInt64(zonedFeed.count)))
    }

    @Test("a frame decoded ahead whose feed positions are not this log's is refused as when it is decoded inline")
    func decodedAheadFeedPositionsChecked() throws {
        let dir = TemporaryDirectory("follower")
        defer { dir.remove() }
        let follower = try openStore(dir)
        var rng = SeededRandom(seed: 36)
        let request = sampleRequest(0, rng: &rng)
        let database = SampleData.database
        guard case .recordSaved(_, let record, _) = request.events[0] else { Issue.record("not a save"); return }
        /// A frame of sequence 1, chained to the empty log, with the feed positions given.
        func frame(_ zones: [ZoneSequence], _ databases: [DatabaseSequence]) throws -> [UInt8] {
            let commit = Commit(
                sequence: 1, timestamp: Timestamp(millisecondsSince1970: 1_790_000_000_000), actor: request.actor,
                requestID: request.requestID, clientChangeTokenData: nil, events: request.events, zoneSequences: zones,
                databaseSequences: databases)
            let bytes = try CommitCodec.encode(commit)
            return Frame(
                sequence: 1, dictionaryID: 0, isCompressed: false, uncompressedLength: bytes.count,
                chainHash: LogStore.chainHash(previous: follower.head.hash, commitBytes: bytes), payload: bytes
            ).encoded()
        }
        let zone = record.recordID.zoneID
        let frames = [
            // The zone's first commit, at zone position 5.
            try frame([ZoneSequence(database: database, zoneID: zone, sequence: 5)], [DatabaseSequence(database: database, sequence: 1)]),
            // At database position 2.
            try frame([ZoneSequence(database: database, zoneID: zone, sequence: 1)], [DatabaseSequence(database: database, sequence: 2)]),
            // Naming a zone its event is not in: not even decoded (the codec refuses it).
            try frame(
                [ZoneSequence(database: database, zoneID: ZoneID(zoneName: "Elsewhere", ownerName: zone.ownerName), sequence: 1)],
                [DatabaseSequence(database: database, sequence: 1)]),
            // Naming no database.
            try frame([ZoneSequence(database: database, zoneID: zone, sequence: 1)], []),
        ]
        for (index, bytes) in frames.enumerated() {
            var decoder = FrameDecoder(store: follower)
            let decoded = decoder.decode(bytes)
            // The first two decode: only their append can tell that their positions do not follow.
            #expect((decoded != nil) == (index < 2), "frame \(index)")
            var inlineError: LogError?
            do { _ = try follower.appendFrames([bytes], applying: nil) } catch let error as LogError { inlineError = error }
            var aheadError: LogError?
            do {
                _ = try follower.appendFrames([bytes], decoded: [decoded]) { _, _, _ in }
            } catch let error as LogError {
                aheadError = error
            }
            if index < 2 {
                #expect(inlineError == .doesNotContinue(expected: 1, got: 1, reason: "feed positions differ from this log's"), "frame \(index)")
            } else if case .corruptFrame(sequence: 1, _) = inlineError {
            } else {
                Issue.record("frame \(index): \(String(describing: inlineError))")
            }
            #expect(aheadError == inlineError, "frame \(index)")
        }
        #expect(try follower.lastSequence() == 0)
        // The same save with the positions this log assigns is taken, decoded ahead.
        let good = try frame([ZoneSequence(database: database, zoneID: zone, sequence: 1)], [DatabaseSequence(database: database, sequence: 1)])
        var decoder = FrameDecoder(store: follower)
        follower.didCommit(try follower.appendFrames([good], decoded: [decoder.decode(good)]) { _, _, _ in }.outcome)
        #expect(try follower.lastSequence() == 1)
        #expect(try follower.zoneFeed(database, zone, after: 0).map(\.sequence) == [1])
    }

    @Test("a frame decoded ahead is still refused when it does not follow the head, and nothing of its batch is kept")
    func decodedAheadStillChecked() throws {
        let logs = try ForeignLogs(seed: 32)
        defer { logs.cleanup() }
        let (leader, other, follower) = (logs.leader, logs.other, logs.follower)
        follower.didCommit(try follower.appendFrames([try #require(try leader.frameBytes(1))], applying: nil).outcome)

        // Frames 2 and 3 of another log chain to each other, not to this head.
        var decoder = FrameDecoder(store: follower)
        let foreign = try other.rawFrames(from: 1, limit: 3, maxBytes: .max)
        let decoded = foreign.map { decoder.decode($0) }
        #expect(throws: LogError.self) {
            _ = try follower.appendFrames(Array(foreign[1...]), decoded: Array(decoded[1...])) { _, _, _ in }
        }
        // Out of order: frame 3 of the leader's own log, decoded ahead, after head 1.
        var own = FrameDecoder(store: follower)
        let third = try #require(try leader.frameBytes(3))
        #expect(throws: LogError.self) {
            _ = try follower.appendFrames([third], decoded: [own.decode(third)]) { _, _, _ in }
        }
        #expect(try follower.lastSequence() == 1)
        #expect(try follower.verifyChain().isIntact)
    }

    @Test("a damaged frame is not decoded ahead, and its append fails as it would have")
    func damagedFrameNotDecoded() throws {
        let logs = try LeaderAndFollower(seed: 33, commits: 2)
        defer { logs.cleanup() }
        let (leader, follower) = (logs.leader, logs.follower)
        var damaged = try #require(try leader.frameBytes(1))
        damaged[damaged.count - 5] ^= 0x40
        var decoder = FrameDecoder(store: follower)
        #expect(decoder.decode(damaged) == nil)
        var inlineError: LogError?
        do { _ = try follower.appendFrames([damaged], applying: nil) } catch let error as LogError { inlineError = error }
        var aheadError: LogError?
        do {
            _ = try follower.appendFrames([damaged], decoded: [decoder.decode(damaged)]) { _, _, _ in }
        } catch let error as LogError {
            aheadError = error
        }
        #expect(inlineError != nil)
        #expect(aheadError == inlineError)
        #expect(try follower.lastSequence() == 0)
    }
}
