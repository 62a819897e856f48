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
