import CumulusEngine
import CumulusLog
import CumulusModel
import Foundation
import Testing

/// A cluster member's role changes while it runs: it follows one leader, then leads
/// in the epoch it won, and its log and writer change with it.
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

    @Test func aFollowerRefusesWritesNamingItsLeaderAndStaysOneOnDisk() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try world.container.follow(leaderURL: "http://n2:8765")
        #expect(world.container.role == .follower(leaderURL: "http://n2:8765"))
        let error = await refusal(world, zone, "while-following")
        #expect(error?.code == .notLeader)
        #expect(error?.message.contains("http://n2:8765") == true)
        #expect(world.container.store.isFollowerDirectory, "opened on its own later, it must take no writes")
    }

    @Test func leadingInANewEpochLetsWritesInAndIsRemembered() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let before = world.container.store.epoch
        let head = world.container.store.head.sequence
        try world.container.follow(leaderURL: "http://n2:8765")
        try world.container.lead(epoch: before + 3)
        #expect(world.container.role == .leader)
        #expect(world.container.store.epoch == before + 3)
        // The epoch's first commit says where it began, before any write of it.
        #expect(try world.container.store.epochStarts() == [.init(epoch: before + 3, sequence: head + 1)])
        #expect(!world.container.store.isFollowerDirectory)
        try await world.save([item("while-leading", in: zone)])
        #expect(try world.allExist([RecordID(recordName: "while-leading", zoneID: zone)]))
        // A restart opens it as the leader it became, in that epoch.
        world.container.close()
        let reopened = try Container(path: world.path)
        #expect(reopened.store.epoch == before + 3)
        #expect(!reopened.store.isFollowerDirectory)
        reopened.close()
    }

    @Test func anEpochThatIsNotNewIsRefused() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try world.container.follow(leaderURL: "http://n2:8765")
        let epoch = world.container.store.epoch
        #expect(throws: (any Error).self) { try world.container.lead(epoch: epoch) }
        #expect(world.container.role == .follower(leaderURL: "http://n2:8765"), "still following")
        #expect(await refusal(world, zone, "same-epoch")?.code == .notLeader)
        #expect(world.container.store.epoch == epoch)
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
