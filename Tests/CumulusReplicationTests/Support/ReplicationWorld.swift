import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation

@testable import CumulusReplication

/// Temporary directories for replication tests, and the helpers they share: making
/// commits on a leader, opening a follower with its leader's identity, comparing
/// views and logs.
enum ReplicationWorld {
    static let user = ContainerWorld.user
    static let containerID = ContainerWorld.containerID

    /// A fresh temporary directory path (not created).
    static func temporaryPath(_ label: String = #function) -> String {
        TemporaryDirectory("repl-" + label).path
    }

    /// A follower of `leader` in a new directory: the leader's identity and
    /// configuration seeded before the container opens, as `FollowerSeeder` does.
    static func follower(of leader: Container, path: String = temporaryPath()) throws -> Container {
        let leaderURL = Self.leaderURL
        let configuration = try ReplicatedConfiguration.read(from: leader.store.logEnvironment)
        try FollowerSeeder.seedIdentity(path: path, identity: leader.store.identity, configuration: configuration)
        return try Container(path: path, refusingWrites: NodeState.refusal(for: .follower(leaderURL: leaderURL)))
    }

    static func database(_ container: Container) -> Database {
        container.privateDatabase(container: containerID, user: user)
    }

    /// About `count` commits on `container` (each one a commit): saves of parents
    /// and children that reference them (delete-self), and every tenth a parent's
    /// delete, so cascades are replicated too. Each of `concurrency` submitters owns
    /// its families, so every operation succeeds; together they make group commits.
    static func makeCommits(_ count: Int, on container: Container, seed: Int = 0, concurrency: Int = 16) async throws {
        let db = database(container)
        let zone = ZoneID(zoneName: "Lists", ownerName: user)
        _ = try await db.saveZones([zone], as: user)
        let perWorker = max(1, (count - 1) / concurrency)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for step in 0..<perWorker {
                        let name = { (step: Int) in "s\(seed)-w\(worker)-\(step)" }
                        let family = step - step % 10
                        let parentID = RecordID(recordName: name(family), zoneID: zone)
                        if step % 10 == 9 {
                            let result = try await db.modify(deleting: [parentID], as: user)
                            _ = try result.deleteResults[0].result.get()
                            continue
                        }
                        var record = Record(
                            recordType: "Item", recordID: RecordID(recordName: name(step), zoneID: zone),
                            fields: ["title": .string("item \(step) of \(worker)"), "rank": .int64(Int64(step))])
                        if step % 10 != 0 {
                            record["list"] = .reference(Reference(recordID: parentID, action: .deleteSelf))
                        }
                        let result = try await db.modify(saving: [record], savePolicy: .allKeys, as: user)
                        _ = try result.saveResults[0].result.get()
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Digests of every view table.
    static func digests(_ container: Container) throws -> [ViewDigest] {
        try container.viewDigests()
    }

    /// The leader URL a follower made by ``follower(of:path:)`` names.
    static let leaderURL = "http://leader.test:8765"

    /// `container` as a node in `role` (a leader unless told).
    static func node(_ container: Container, _ role: NodeRole = .leader) -> NodeState {
        NodeState(container: container, role: role, because: "a test opened it")
    }

    /// Digests of every view table of the data directory at `path` (opened read-only).
    static func digests(atPath path: String) throws -> [ViewDigest] {
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        let container = try Container(path: path, environmentOptions: options)
        defer { container.close() }
        return try digests(container)
    }

    /// The chain hashes of the log at `path`, from 1 to its head.
    static func chain(atPath path: String) throws -> [[UInt8]] {
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        let store = try LogStore(environment: LMDBEnvironment(path: path, options: options))
        var hashes: [[UInt8]] = []
        var sequence: UInt64 = 1
        while sequence <= store.head.sequence {
            guard let hash = try store.chainHash(at: sequence) else { break }
            hashes.append(hash)
            sequence += 1
        }
        return hashes
    }
}
