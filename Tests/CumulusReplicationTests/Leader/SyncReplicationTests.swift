import CumulusEngine
import CumulusModel
import Foundation
import Logging
import Synchronization
import Testing

@testable import CumulusReplication

/// Semi-synchronous commit in process: followers stand in as reports to the leader's
/// registry, as the replication endpoints make them.
@Suite struct SyncReplicationTests {
    final class Flag: Sendable {
        private let value = Atomic(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    func leader(_ policy: SyncReplication.Policy) async throws -> (Container, ReplicationLeader, SyncReplication, Database) {
        let container = try Container(path: ReplicationWorld.temporaryPath("sync-replication"))
        let db = ReplicationWorld.database(container)
        _ = try await db.saveZones([ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)], as: ReplicationWorld.user)
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        let sync = leader.requireReplicas(policy)
        return (container, leader, sync, db)
    }

    /// Closes `container` and removes its directory.
    func finish(_ container: Container) {
        container.close()
        try? FileManager.default.removeItem(atPath: container.path)
    }

    func save(_ name: String, _ db: Database) async throws {
        let record = Record(
            recordType: "Item", recordID: RecordID(recordName: name, zoneID: ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)))
        _ = try await db.modify(saving: [record], as: ReplicationWorld.user).saveResults[0].result.get()
    }

    /// Starts saving `name`, and returns once it is durable on the leader (at `head` + 1),
    /// with the save's task and a flag set when the save was acknowledged.
    func startWrite(_ name: String, _ db: Database, _ container: Container, after head: UInt64) async throws
        -> (Task<Void, any Error>, Flag)
    {
        let done = Flag()
        let write = Task {
            try await save(name, db)
            done.set()
        }
        try await waitUntil("the write to be durable on the leader", timeout: .seconds(60)) {
            container.store.head.sequence == head + 1
        }
        return (write, done)
    }

    func code(_ body: () async throws -> Void) async -> CumulusError.Code? {
        do {
            try await body()
            return nil
        } catch let error as CumulusError {
            return error.code
        } catch {
            return .internalError
        }
    }

    @Test func withoutFollowersNothingIsWritten() async throws {
        let (container, _, sync, db) = try await leader(.init(replicas: 1, timeout: .milliseconds(300)))
        let head = container.store.head.sequence
        #expect(await code { try await save("alone", db) } == .serverRejectedRequest)
        #expect(container.store.head.sequence == head, "refused before anything was written")
        #expect(sync.fallbacks == 0)
        finish(container)
    }

    @Test func theAsyncFallbackWritesAndCounts() async throws {
        let (container, leader, sync, db) = try await leader(.init(replicas: 1, timeout: .milliseconds(200), fallback: .async))
        let head = container.store.head.sequence
        try await save("alone", db)
        #expect(container.store.head.sequence == head + 1)
        #expect(sync.fallbacks == 1)
        // The leader's status says how its writes wait, and how often they fell back.
        #expect(leader.status().semiSynchronous == ReplicationStatus.SemiSynchronous(
            replicas: 1, timeoutMilliseconds: 200, fallback: "async", fallbacks: 1))
        finish(container)
    }

    @Test func aLeaderWithoutReplicasSaysNothingOfThem() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath("no-sync-replication"))
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        #expect(leader.status().semiSynchronous == nil)
        finish(container)
    }

    @Test func aWriteIsAcknowledgedOnlyOnceAFollowerHoldsIt() async throws {
        let (container, leader, _, db) = try await leader(.init(replicas: 1, timeout: .seconds(120)))
        let head = container.store.head.sequence
        leader.followers.streamOpened("f1", at: head)
        let (write, done) = try await startWrite("confirmed", db, container, after: head)
        // Durable on the leader, but no follower has said it holds it.
        #expect(!done.isSet)
        leader.report(follower: "f1", applied: head)
        #expect(!done.isSet, "a report of an older position releases nothing")
        leader.report(follower: "f1", applied: head + 1)
        try await write.value
        #expect(done.isSet)
        finish(container)
    }

    @Test func itTakesAsManyFollowersAsTheReplicasAskedFor() async throws {
        let (container, leader, _, db) = try await leader(.init(replicas: 2, timeout: .seconds(120)))
        let head = container.store.head.sequence
        leader.followers.streamOpened("f1", at: head)
        leader.followers.streamOpened("f2", at: head)
        let (write, done) = try await startWrite("twice", db, container, after: head)
        leader.report(follower: "f1", applied: head + 1)
        #expect(!done.isSet, "one of two")
        // A follower whose stream closed does not count, whatever it said before.
        leader.followers.streamClosed("f2")
        leader.report(follower: "f2", applied: head + 1)
        #expect(!done.isSet)
        leader.followers.streamOpened("f2", at: head + 1)
        try await write.value
        #expect(done.isSet)
        finish(container)
    }

    @Test func anUnconfirmedWriteIsReportedUnknownNotLost() async throws {
        let (container, leader, _, db) = try await leader(.init(replicas: 1, timeout: .milliseconds(300)))
        let head = container.store.head.sequence
        leader.followers.streamOpened("silent", at: head)
        #expect(await code { try await save("unconfirmed", db) } == .serverRejectedRequest)
        // It is in the leader's log, and goes to followers as any commit does.
        #expect(container.store.head.sequence == head + 1)
        finish(container)
    }

    @Test func aWriteWaitingForAFollowerToConnectIsLetInWhenOneDoes() async throws {
        // A long timeout: the write must be let in by the connection, not by the clock.
        let (container, leader, sync, db) = try await leader(.init(replicas: 1, timeout: .seconds(120)))
        let head = container.store.head.sequence
        let done = Flag()
        let write = Task {
            try await save("waited", db)
            done.set()
        }
        // Nothing is written while no follower is connected; then one connects.
        try await Task.sleep(for: .milliseconds(200))
        #expect(container.store.head.sequence == head && !done.isSet)
        let started = ContinuousClock.now
        leader.followers.streamOpened("late", at: head)
        try await waitUntil("the write to be durable on the leader", timeout: .seconds(60)) {
            container.store.head.sequence == head + 1
        }
        #expect(ContinuousClock.now - started < .seconds(60), "let in by the connection, not the timeout")
        leader.report(follower: "late", applied: head + 1)
        try await write.value
        #expect(done.isSet && sync.fallbacks == 0)
        finish(container)
    }

    @Test func aWriteWaitingForFollowersEndsWhenItsTaskIsCancelled() async throws {
        let (container, _, _, db) = try await leader(.init(replicas: 1, timeout: .seconds(120)))
        let head = container.store.head.sequence
        let write = Task { await code { try await save("cancelled", db) } }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        write.cancel()
        #expect(await write.value == .serverRejectedRequest)
        #expect(ContinuousClock.now - started < .seconds(60), "the wait ends with its task, not at the timeout")
        #expect(container.store.head.sequence == head)
        finish(container)
    }

    @Test func aFollowerRefusesAtOnceWithoutWaitingForReplicas() async throws {
        let (container, leader, _, db) = try await leader(.init(replicas: 1, timeout: .seconds(120)))
        try leader.node.follow(leaderURL: "http://elsewhere:8765", because: "another leads")
        let started = ContinuousClock.now
        #expect(await code { try await save("on-a-follower", db) } == .notLeader)
        #expect(ContinuousClock.now - started < .seconds(60), "the fence answers before the admission check waits")
        finish(container)
    }
}
