import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Commit encoding")
struct CommitCodecTests {
    @Test("random commits of every event kind round-trip to the same bytes")
    func roundTrip() throws {
        var random = RandomRecords(seed: 42)
        for index in 0..<3_000 {
            var commit = random.commit(sequence: UInt64(index + 1))
            commit.events = commit.events.map(\.canonical)
            let bytes = try CommitCodec.encode(commit)
            let decoded = try CommitCodec.decode(bytes)
            #expect(decoded == commit)
            #expect(try CommitCodec.encode(decoded) == bytes)
            if decoded != commit { return }
        }
    }

    @Test("feed positions must name exactly the zones the events touch")
    func positionsMustMatchEvents() throws {
        var random = RandomRecords(seed: 1)
        var commit = random.commit(sequence: 1)
        commit.events = [.zoneSaved(database: SampleData.database, zone: Zone(zoneID: SampleData.zone))]
        commit.zoneSequences = []
        commit.databaseSequences = [DatabaseSequence(database: SampleData.database, sequence: 1)]
        #expect(throws: CumulusError.self) { try CommitCodec.decode(CommitCodec.encode(commit)) }
    }

    @Test("20,000 damaged commit encodings decode or fail cleanly")
    func hostileBytes() throws {
        try forEachDamagedCommit(seed: 99, count: 20_000) { _, bytes in
            do {
                let commit = try CommitCodec.decode(bytes)
                #expect(try CommitCodec.encode(commit) == bytes)
            } catch is CumulusError {}
            return true
        }
    }
}
