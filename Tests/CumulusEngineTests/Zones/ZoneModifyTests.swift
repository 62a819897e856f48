import CumulusEngine
import CumulusLog
import CumulusModel
import Testing

/// A zone modify is one operation: its saves and deletes, in order, in one commit
/// (``ZonePlanner``), as a records modify is.
@Suite("Zone modify")
struct ZoneModifyTests {
    @Test("saves and deletes apply in order in one commit; each operation sees the ones before it; a failing one changes nothing")
    func oneCommitInOrder() async throws {
        let world = try EngineWorld()
        let owner = EngineWorld.user
        let a = ZoneID(zoneName: "A", ownerName: owner)
        let b = ZoneID(zoneName: "B", ownerName: owner)
        let missing = ZoneID(zoneName: "Missing", ownerName: owner)
        let head = world.container.store.head.sequence
        let results = try await world.db.modifyZones(
            [.save(a), .save(b), .delete(a), .delete(missing), .delete(.default), .save(b)], as: owner,
            requestID: "zones-1")
        #expect(results.map(\.operation.zoneID.zoneName) == ["A", "B", "A", "Missing", ZoneID.defaultZoneName, "B"])
        #expect(try results[0].result.get()?.zoneID == a)
        #expect(try results[1].result.get()?.zoneID == b)
        #expect(try results[2].result.get() == nil, "deleted")
        #expect(failure(results[3].result)?.code == .zoneNotFound)
        #expect(failure(results[4].result)?.code == .invalidArguments)
        #expect(try results[5].result.get()?.zoneID == b, "saving a zone the operation made returns it")

        let store = world.container.store
        #expect(store.head.sequence == head + 1, "one commit")
        let commit = try #require(try store.read(head + 1))
        #expect(commit.requestID == "zones-1")
        #expect(commit.events == [
            .zoneSaved(database: world.db.id, zone: Zone(zoneID: a)), .zoneSaved(database: world.db.id, zone: Zone(zoneID: b)),
            .zoneDeleted(database: world.db.id, zoneID: a),
        ])
        let zones = try world.db.allZones(as: owner).map(\.zoneID.zoneName)
        #expect(zones.contains("B") && !zones.contains("A"))
        try world.checkLiveAndRebuilt {}
    }

    @Test("nothing to change (a zone that exists, a deletion refused) appends no commit")
    func nothingToChange() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone("Lists")
        let head = world.container.store.head.sequence
        let results = try await world.db.modifyZones(
            [.save(zone), .delete(ZoneID(zoneName: "Nope", ownerName: EngineWorld.user))], as: EngineWorld.user)
        #expect(try results[0].result.get()?.zoneID == zone)
        #expect(failure(results[1].result)?.code == .zoneNotFound)
        #expect(world.container.store.head.sequence == head)
    }
}
