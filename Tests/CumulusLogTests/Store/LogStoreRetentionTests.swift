import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

/// Dropping the oldest commits (`--retain-commits`): what is kept still proves itself,
/// and whatever asks for a dropped commit is told so.
@Suite("Log retention")
struct LogStoreRetentionTests {
    /// A log of `count` sample saves in `dir`, and their commits.
    static func log(_ dir: TemporaryDirectory, count: Int, seed: UInt64) throws -> (LogStore, [Commit]) {
        let store = try openStore(dir)
        var rng = SeededRandom(seed: seed)
        let commits = try appendDirect(store, (0..<count).map { sampleRequest($0, rng: &rng) })
        return (store, commits)
    }

    @Test("dropping through 30 of 50 keeps 31…50 and records where the log starts, with the hash before it")
    func dropKeepsTheRest() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (store, commits) = try Self.log(dir, count: 50, seed: 41)
        let hash30 = try #require(try store.chainHash(at: 30))
        #expect(store.firstRetained == 1)
        #expect(try store.dropCommits(through: 30, limit: 1_000) == 30)
        #expect(store.firstRetained == 31)
        #expect(store.retainedBase == LogHead(sequence: 30, hash: hash30))
        #expect(try store.range(from: 31) == Array(commits[30...]))
        let meta = try store.logEnvironment.table("meta")
        let stored = try store.logEnvironment.read { try $0.get(meta, key: Array("retainedFrom".utf8)) }
        #expect(stored == BigEndian.bytes(UInt64(31)) + hash30)
        // Nothing more is due: a second call drops nothing.
        #expect(try store.dropCommits(through: 30, limit: 1_000) == 0)
    }

    @Test("each call drops at most its limit, and never the head")
    func boundedBatchesKeepTheHead() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (store, _) = try Self.log(dir, count: 40, seed: 42)
        var calls = 0
        while try store.dropCommits(through: .max, limit: 7) > 0 {
            calls += 1
            #expect(store.retainedBase.sequence == UInt64(min(7 * calls, 39)))
        }
        #expect(calls == 6)
        #expect(store.firstRetained == 40)
        #expect(try store.read(40)?.sequence == 40)
        #expect(try store.verifyChain().isIntact)
    }

    @Test("reading a dropped commit, or a range that starts before the log, is a truncated error, not nil or a crash")
    func readersSayWhatWasDropped() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (store, commits) = try Self.log(dir, count: 30, seed: 43)
        let hash20 = try #require(try store.chainHash(at: 20))
        try store.dropCommits(through: 20, limit: 1_000)
        let truncated = LogError.truncated(sequence: 5, firstRetained: 21)
        #expect(throws: truncated) { try store.read(5) }
        #expect(throws: LogError.truncated(sequence: 1, firstRetained: 21)) { try store.range(from: 1) }
        #expect(throws: LogError.truncated(sequence: 1, firstRetained: 21)) { try store.range(from: 0, through: 3) }
        #expect(throws: LogError.truncated(sequence: 10, firstRetained: 21)) {
            try store.rawFrames(from: 10, limit: 10, maxBytes: .max)
        }
        #expect(throws: truncated) { try store.commits(at: [25, 5]) }
        #expect(throws: LogError.truncated(sequence: 19, firstRetained: 21)) { try store.chainHash(at: 19) }
        #expect(throws: LogError.truncated(sequence: 20, firstRetained: 21)) {
            try store.commitViewsWithHashes(from: 20) { _, _, _ in true }
        }
        #expect(truncated.description.contains("retention"))
        // What is kept reads as before; the last dropped commit still has its hash.
        #expect(try store.chainHash(at: 20) == hash20)
        #expect(try store.commits(at: [21, 30]) == [commits[20], commits[29]])
        #expect(try store.rawFrames(from: 21, limit: 100, maxBytes: .max).count == 10)
        var previous: [UInt8]?
        try store.commitViewsWithHashes(from: 21, through: 21) { _, _, before in
            previous = before
            return true
        }
        #expect(previous == hash20)
        // Beyond the head is still simply nothing.
        #expect(try store.read(31) == nil)
    }

    @Test("verifyChain passes from the first retained commit, and still catches a wrong hash before it")
    func verifyChainFromTheRetainedStart() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let (store, _) = try Self.log(dir, count: 30, seed: 44)
        try store.dropCommits(through: 12, limit: 1_000)
        let report = try store.verifyChain()
        #expect(report.isIntact, "\(report)")
        #expect(report.from == 13)
        #expect(report.verified == 18)
        #expect(try store.verifyChain(from: 20).isIntact)
        // A recorded hash that the first retained frame does not chain from is found.
        let meta = try store.logEnvironment.table("meta")
        try store.logEnvironment.write { txn in
            try txn.put(meta, key: Array("retainedFrom".utf8), value: BigEndian.bytes(UInt64(13)) + [UInt8](repeating: 7, count: 32))
        }
        let damaged = try store.verifyChain()
        #expect(damaged.firstBad == 13, "\(damaged)")
    }

    @Test("commits appended after a drop chain on; a reopened log keeps its truncation and verifies")
    func restartKeepsTheTruncation() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        var rng = SeededRandom(seed: 45)
        let base = try {
            let store = try openStore(dir)
            try appendDirect(store, (0..<25).map { sampleRequest($0, rng: &rng) })
            try store.dropCommits(through: 15, limit: 4)
            try store.dropCommits(through: 15, limit: 100)
            try appendDirect(store, (25..<30).map { sampleRequest($0, rng: &rng) })
            #expect(try store.verifyChain().isIntact)
            return store.retainedBase
        }()
        #expect(base.sequence == 15)
        let reopened = try openStore(dir)
        #expect(reopened.retainedBase == base)
        #expect(reopened.firstRetained == 16)
        #expect(reopened.head.sequence == 30)
        #expect(throws: LogError.truncated(sequence: 15, firstRetained: 16)) { try reopened.read(15) }
        let report = try reopened.verifyChain()
        #expect(report.isIntact && report.from == 16 && report.verified == 15, "\(report)")
    }
}
