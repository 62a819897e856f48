import CumulusEngine
import CumulusLog
import CumulusModel
import Foundation
import Testing

/// What the engine knows of a node's role: whether it leads (takes writes in its
/// epoch) or refuses writes with the reason the node gave, and the gate every write
/// passes. The roles themselves are the node's (`NodeStateTests`).
@Suite struct ContainerRoleTests {
    func item(_ name: String, in zone: ZoneID) -> Record {
        var record = Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone))
        record["title"] = .string(name)
        return record
    }

    func refusal(_ world: EngineWorld, _ zone: ZoneID, _ name: String) async -> CumulusError? {
        do {
            try await world.save([item(name, in: zone)])
            return nil
        } catch let error as CumulusError {
            return error
        } catch {
            return CumulusError(.internalError, "\(error)")
        }
    }

    @Test func refusedWritesNameTheirReasonUntilTheContainerLeadsInANewEpoch() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let before = world.container.store.epoch
        let head = world.container.store.head.sequence
        #expect(world.container.leads && world.container.takesWrites)
        world.container.refuseWrites(CumulusError(.notLeader, "send writes to the leader at http://n2:8765"))
        #expect(!world.container.leads && !world.container.takesWrites)
        let error = await refusal(world, zone, "refused")
        #expect(error?.code == .notLeader)
        #expect(error?.message.contains("http://n2:8765") == true)
        try world.container.markFollower()
        #expect(world.container.store.isFollowerDirectory, "opened on its own later, it must take no writes")
        try world.container.lead(epoch: before + 3)
        #expect(world.container.leads && world.container.takesWrites)
        // The epoch's first commit says where it began, before any write of it.
        #expect(try world.container.store.epochStarts() == [.init(epoch: before + 3, sequence: head + 1)])
        #expect(!world.container.store.isFollowerDirectory)
        try await world.save([item("while-leading", in: zone)])
        #expect(try world.allExist([RecordID(recordName: "while-leading", zoneID: zone)]))
        // A restart opens it leading, in that epoch.
        world.container.close()
        let reopened = try Container(path: world.path)
        #expect(reopened.store.epoch == before + 3)
        #expect(reopened.leads && reopened.takesWrites)
        reopened.close()
    }

    @Test func anEpochThatIsNotNewIsRefusedAndWritesStayOut() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        world.container.refuseWrites(CumulusError(.notLeader, "a follower"))
        let epoch = world.container.store.epoch
        #expect(throws: (any Error).self) { try world.container.lead(epoch: epoch) }
        #expect(!world.container.leads)
        #expect(await refusal(world, zone, "same-epoch")?.code == .notLeader)
        #expect(world.container.store.epoch == epoch)
    }

    @Test func aDirectoryOpenedWithARefusalTakesNoWritesAndRunsNoReaper() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        world.container.close()
        let refused = try Container(path: world.path, refusingWrites: CumulusError(.notLeader, "waiting for an election"))
        defer { refused.close() }
        #expect(!refused.leads)
        do {
            _ = try await refused.database(world.db.id).modify(saving: [item("x", in: zone)], as: EngineWorld.user)
            Issue.record("a refusing container took a write")
        } catch let error as CumulusError {
            #expect(error.message == "waiting for an election")
        }
    }

    @Test func aGatedWriteIsDurableButNotAcknowledged() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let head = world.container.store.head.sequence
        world.container.writer.gate.install(LapsedLease(), at: .lease)
        let error = await refusal(world, zone, "unacknowledged")
        #expect(error?.code == .serverRejectedRequest)
        #expect(error?.message == "the lease ran out")
        // Committed before the gate was asked: in the log, though nobody was told.
        #expect(world.container.store.head.sequence == head + 1)
        world.container.writer.gate.install(nil, at: .lease)
        try await world.save([item("acknowledged", in: zone)])
        #expect(world.container.store.head.sequence == head + 2)
    }

    @Test func aGateLetsThroughWhatCommitsNothing() async throws {
        let world = try EngineWorld()
        _ = try await world.makeZone()
        world.container.writer.gate.install(LapsedLease(), at: .lease)
        // A fetch is no write; a delete of nothing commits nothing.
        let result = try await world.db.modify(
            deleting: [RecordID(recordName: "absent", zoneID: ZoneID(zoneName: "Lists", ownerName: EngineWorld.user))],
            atomic: false, as: EngineWorld.user)
        #expect(result.sequence == nil)
    }
}

/// A lease that has run out: every durable group is answered with its error.
private struct LapsedLease: AcknowledgementPolicy {
    func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void) {
        answer(CumulusError(.serverRejectedRequest, "the lease ran out"))
    }
}
