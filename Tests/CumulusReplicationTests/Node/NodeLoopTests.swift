import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import CumulusTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// The node's life across rejoins: what its machine decides, performed on a real
/// directory (moved aside, never deleted) and recorded in the node's history.
@Suite struct NodeLoopTests {
    let logger = Logger(label: "node-loop-tests")

    /// A data directory holding one file, under a fresh parent.
    func dataDirectory(_ root: TemporaryDirectory) throws -> String {
        let data = root.path + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try Data("kept".utf8).write(to: URL(fileURLWithPath: data + "/marker"))
        return data
    }

    /// The entries of `root` whose names start with `prefix`.
    func entries(_ root: TemporaryDirectory, _ prefix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasPrefix(prefix) }
    }

    @Test func aClusterMemberThatMustRejoinServesAgainOnAFreshDirectory() async throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = try dataDirectory(root)
        let history = NodeHistory()
        let rounds = Mutex(0)
        try await NodeLoop.run(data: data, mode: .cluster, history: history, logger: logger) {
            let round = rounds.withLock { $0 += 1; return $0 }
            if round == 1 { throw MustRejoin(reason: "the leader's log took another course at 7") }
            // Served again: the old directory is gone from its place.
            #expect(!FileManager.default.fileExists(atPath: data))
        }
        #expect(rounds.withLock { $0 } == 2)
        let aside = try entries(root, "data.diverged-")
        #expect(aside.count == 1)
        #expect(FileManager.default.fileExists(atPath: root.path + "/" + (aside.first ?? "") + "/marker"), "kept, not deleted")
        #expect(history.changes.last?.role == "rejoining")
        #expect(history.changes.last?.reason.contains("another course at 7") == true)
    }

    @Test func aFixedFollowerReseedsWhenTornOrBehindAndStopsWhenDiverged() async throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = try dataDirectory(root)
        let history = NodeHistory()
        let errors: [any Error] = [LogError.viewsTorn("torn by a crash"), ReplicationError.behindRetention("dropped")]
        let rounds = Mutex(0)
        await #expect(throws: ReplicationError.self) {
            try await NodeLoop.run(data: data, mode: .follower(leaderURL: "http://l:1"), history: history, logger: logger) {
                let round = rounds.withLock { $0 += 1; return $0 }
                try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
                // As the container does when it opens the directory.
                history.record("follower", epoch: 1, leaderURL: "http://l:1", reason: "opened \(data)")
                if round <= errors.count { throw errors[round - 1] }
                throw ReplicationError.diverged("fork")
            }
        }
        #expect(rounds.withLock { $0 } == 3)
        #expect(try entries(root, "data.torn-").count == 1)
        #expect(try entries(root, "data.behind-").count == 1)
        #expect(try entries(root, "data.diverged-").isEmpty, "diverged history needs an operator")
        #expect(history.changes.map(\.role) == ["follower", "rejoining", "follower", "rejoining", "follower"])
    }

    @Test func aLeaderStopsWithTheErrorAndMovesNothing() async throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let data = try dataDirectory(root)
        await #expect(throws: LogError.self) {
            try await NodeLoop.run(data: data, mode: .leader, history: NodeHistory(), logger: logger) {
                throw LogError.viewsTorn("torn")
            }
        }
        #expect(FileManager.default.fileExists(atPath: data + "/marker"))
        #expect(try entries(root, "data.").isEmpty)
    }
}
