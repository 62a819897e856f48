import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Epoch starts")
struct LogStoreEpochTests {
    /// A log of `commits` sample saves in `directory`.
    func store(_ directory: TemporaryDirectory, commits: Int, seed: UInt64) throws -> LogStore {
        let store = try openStore(directory)
        var rng = SeededRandom(seed: seed)
        try appendDirect(store, (0..<commits).map { sampleRequest($0, rng: &rng) })
        return store
    }

    @Test("leading in a new epoch appends the commit that begins it, and the log records where")
    func leadingRecordsTheStart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        do {
            let store = try store(directory, commits: 3, seed: 1)
            let applied = Mutex<[UInt64]>([])
            let commit = try #require(try store.lead(inEpoch: 4) { commit, _ in applied.withLock { $0.append(commit.sequence) } })
            #expect(commit.sequence == 4 && commit.events == [.epochBegan(epoch: 4)])
            #expect(applied.withLock { $0 } == [4], "the epoch's commit passes through the views like any other")
            #expect(store.epoch == 4 && store.head.sequence == 4)
            #expect(try store.read(4) == commit)
            #expect(try store.epochStarts() == [LogStore.EpochStart(epoch: 4, sequence: 4)])
            // Epochs 1 to 3 end where epoch 4 began; epoch 4 has not ended here.
            let ends = try store.logEnvironment.read { txn in
                try [UInt64(1), 2, 3, 4, 9].map { try store.lastSequence(ofEpoch: $0, in: txn) }
            }
            #expect(ends == [3, 3, 3, nil, nil])
            #expect(try store.promote(applying: nil) == 5)
            #expect(try store.epochStarts().map(\.epoch) == [4, 5])
            #expect(try store.verifyChain().isIntact)
        }
        let reopened = try openStore(directory)
        #expect(reopened.epoch == 5)
        #expect(try reopened.epochStarts() == [.init(epoch: 4, sequence: 4), .init(epoch: 5, sequence: 5)])
        let ends = try reopened.logEnvironment.read { txn in
            try [UInt64(3), 4, 5].map { try reopened.lastSequence(ofEpoch: $0, in: txn) }
        }
        #expect(ends == [3, 4, nil])
    }

    @Test("a log with no commits leads without a start: no token can point into a history it lacks")
    func anEmptyLogRecordsNoStart() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try openStore(directory)
        #expect(try store.lead(inEpoch: 1, applying: nil) == nil)
        #expect(store.head.sequence == 0 && store.epoch == 1)
        #expect(try store.epochStarts().isEmpty)
        // Not an epoch it already holds, once it has commits.
        var rng = SeededRandom(seed: 2)
        try appendDirect(store, [sampleRequest(0, rng: &rng)])
        #expect(throws: LogError.self) { try store.lead(inEpoch: 1, applying: nil) }
        #expect(store.head.sequence == 1)
    }

    @Test("a follower appending its leader's frames records the same starts")
    func followersRecordTheLeadersStarts() throws {
        let logs = try LeaderAndFollower(seed: 3, commits: 5)
        defer { logs.cleanup() }
        try logs.leader.lead(inEpoch: 2, applying: nil)
        var rng = SeededRandom(seed: 4)
        try appendDirect(logs.leader, [sampleRequest(5, rng: &rng)])
        try logs.leader.lead(inEpoch: 7, applying: nil)
        let frames = try logs.leader.rawFrames(from: 1, limit: 100, maxBytes: .max)
        logs.follower.didCommit(try logs.follower.appendFrames(frames, applying: nil).outcome)
        #expect(try logs.follower.epochStarts() == logs.leader.epochStarts())
        #expect(try logs.follower.epochStarts() == [.init(epoch: 2, sequence: 6), .init(epoch: 7, sequence: 8)])
    }

    @Test("an epoch that does not come after every recorded one is refused as damaged, and nothing is appended")
    func epochsBeginInOrder() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try store(directory, commits: 2, seed: 5)
        try store.lead(inEpoch: 3, applying: nil)
        for epoch: UInt64 in [3, 2] {
            #expect(throws: LogError.self) {
                try appendDirect(store, [CommitRequest(actor: "", requestID: "again", events: [.epochBegan(epoch: epoch)])])
            }
        }
        #expect(store.head.sequence == 3)
        #expect(try store.epochStarts() == [.init(epoch: 3, sequence: 3)])
    }
}
