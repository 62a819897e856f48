import CumulusEngine
import CumulusLog
import CumulusServer
import CumulusStorage
import Foundation
import Logging
import Synchronization
import Testing

@testable import CumulusReplication

/// A snapshot is sent while its copy is written: the stream follows the file as it
/// grows, ends only when the copy has, and breaks off if the copy fails.
@Suite("Snapshot file")
struct SnapshotFileTests {
    /// A copy that writes `pieces` in order, each only once the test lets it.
    final class PacedCopy: Sendable {
        let pieces: [[UInt8]]
        let allowed = Mutex(0)
        let failure: StorageError?

        init(pieces: [[UInt8]], failure: StorageError? = nil) {
            self.pieces = pieces
            self.failure = failure
        }

        func run(_ descriptor: Int32) throws(StorageError) {
            for (index, piece) in pieces.enumerated() {
                while allowed.withLock({ $0 }) <= index { usleep(1_000) }
                let wrote = piece.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard wrote == piece.count else { throw .invalidArgument("short write") }
            }
            if let failure { throw failure }
        }

        func allow(_ count: Int) { allowed.withLock { $0 = count } }
    }

    static func piece(_ index: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &+ index) } }

    @Test("the stream sends what the copy has written as it writes it, whole chunks while it runs, the rest at its end")
    func followsTheCopy() async throws {
        let chunk = SnapshotFile.chunkSize
        let pieces = [Self.piece(1, chunk + 100), Self.piece(2, chunk / 2), Self.piece(3, chunk / 2 - 100), Self.piece(4, 777)]
        let copy = PacedCopy(pieces: pieces)
        let released = Mutex(false)
        var file: SnapshotFile? = try SnapshotFile(
            into: ReplicationWorld.temporaryPath(), released: { released.withLock { $0 = true } }
        ) { descriptor throws(StorageError) in try copy.run(descriptor) }
        do {
            let streamed = try #require(file)
            do {
                var chunks = streamed.makeAsyncIterator()
                copy.allow(1)
                // One whole chunk is written: it is sent; the 100 bytes past it wait.
                let first = try #require(try await chunks.next())
                #expect(Array(first.readableBytesView) == Array(pieces[0].prefix(chunk)))
                copy.allow(3)
                let second = try #require(try await chunks.next())
                #expect(Array(second.readableBytesView) == Array(pieces[0].dropFirst(chunk) + pieces[1] + pieces[2]))
            }
            // A second reader from the start: it cannot end before the copy has.
            let ended = Mutex(false)
            let reader = Task {
                var chunks = streamed.makeAsyncIterator()
                var bytes: [UInt8] = []
                while let part = try await chunks.next() { bytes += part.readableBytesView }
                ended.withLock { $0 = true }
                return bytes
            }
            try await Task.sleep(for: .milliseconds(100))
            #expect(!ended.withLock { $0 })
            copy.allow(4)
            #expect(try await reader.value == pieces.flatMap { $0 })
            #expect(!released.withLock { $0 })
        }
        file = nil
        // The reader's task may still hold the file for a moment after it returned.
        let deadline = ContinuousClock.now + .seconds(10)
        while !released.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(released.withLock { $0 })
    }

    @Test("a copy that fails ends the stream with its error, after what it had written")
    func failedCopy() async throws {
        let copy = PacedCopy(pieces: [Self.piece(1, 1000)], failure: .lmdb(code: 28, operation: "mdb_env_copyfd2", message: "No space left on device"))
        copy.allow(1)
        let released = Mutex(false)
        let path = ReplicationWorld.temporaryPath()
        var file: SnapshotFile? = try SnapshotFile(into: path, released: { released.withLock { $0 = true } }) {
            descriptor throws(StorageError) in try copy.run(descriptor)
        }
        do {
            var chunks = try #require(file).makeAsyncIterator()
            await #expect(throws: StorageError.self) { _ = try await chunks.next() }
        }
        file = nil
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(released.withLock { $0 })
    }
}

/// The snapshot over a real socket, as a follower downloads it.
@Suite("Snapshot over HTTP")
struct SnapshotHTTPTests {
    /// Serves `leader` on a loopback port and downloads its snapshot as a follower does.
    static func download(from leader: ReplicationLeader, into path: String) async throws -> Int {
        try await LeaderClientTests.serving(leader) { client, _ in try await client.downloadSnapshot(to: path) }
    }

    @Test("a follower downloads the snapshot whole, and it opens holding the leader's log")
    func wholeSnapshot() async throws {
        let (container, leader) = try await ReplicationLeaderTests.leader()
        let copy = ReplicationWorld.temporaryPath()
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        let bytes = try await Self.download(from: leader, into: copy + "/snapshot")
        #expect(bytes > 0)
        try SnapshotLayout.unpack(copy + "/snapshot", into: copy)
        let store = try LogStore(environment: try LMDBEnvironment(path: copy))
        #expect(store.head == container.store.head)
        container.close()
    }

    @Test("a copy that fails part-way breaks the response off: the follower's download fails, it is not taken as whole")
    func failedCopyBreaksTheDownload() async throws {
        let (container, _) = try await ReplicationLeaderTests.leader()
        let failing = SnapshotFileTests.PacedCopy(
            pieces: [SnapshotFileTests.piece(1, SnapshotFile.chunkSize + 4096)],
            failure: .lmdb(code: 28, operation: "mdb_env_copyfd2", message: "No space left on device"))
        failing.allow(1)
        let leader = ReplicationLeader(
            node: ReplicationWorld.node(container), logger: Logger(label: "test"),
            snapshotCopy: { descriptor throws(StorageError) in try failing.run(descriptor) })
        let path = ReplicationWorld.temporaryPath() + ".mdb"
        await #expect(throws: ReplicationError.self) { _ = try await Self.download(from: leader, into: path) }
        container.close()
    }
}
