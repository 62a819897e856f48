import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Zones")
struct ZoneTests {
    @Test("deleting a zone removes every record in it, with one event")
    func zoneDeleteIsOneEvent() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let keep = try await world.makeZone("Keep")
        let records = (0..<120).map { Record.make("T", "r\($0)", in: zone, ["owner": ref("r0", in: zone, .deleteSelf)]) }
        try await world.save(Array(records.prefix(60)))
        try await world.save(Array(records.dropFirst(60)))
        try await world.save([Record.make("T", "kept", in: keep)])
        let before = try world.container.store.lastSequence()
        let results = try await world.db.deleteZones([zone], as: EngineWorld.user)
        #expect((try? results[0].result.get()) != nil)
        let commit = try world.container.store.read(before + 1)
        #expect(commit?.events == [.zoneDeleted(database: world.db.id, zoneID: zone)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.noneExist(records.map(\.recordID)))
            #expect(try world.exists([id("kept", in: keep)]) == [true])
            #expect(try world.db.allZones(as: EngineWorld.user).map(\.zoneID.zoneName) == ["_defaultZone", "Keep"])
        }
        // The zone can be created again, empty.
        _ = try await world.makeZone()
        #expect(try world.exists([records[0].recordID]) == [false])
        let save = try await world.db.modify(saving: [Record.make("T", "again", in: zone)], as: EngineWorld.user)
        #expect(save.partialFailure == nil)
    }

    @Test("zones: create, fetch, list; the default zone cannot be saved or deleted; custom zones only in private")
    func zoneRules() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let placeholder = ZoneID(zoneName: "Lists")  // __defaultOwner__ means the database's owner
        let again = try await world.db.saveZones([placeholder], as: EngineWorld.user)
        #expect(try again[0].result.get().zoneID == zone)
        #expect(try again[0].result.get().capabilities == .customZoneDefault)
        #expect(failure(try world.db.fetchZones([ZoneID(zoneName: "Nope")], as: EngineWorld.user)[0].result)?.code == .zoneNotFound)
        #expect(failure(try await world.db.saveZones([.default], as: EngineWorld.user)[0].result)?.code == .invalidArguments)
        #expect(failure(try await world.db.deleteZones([.default], as: EngineWorld.user)[0].result)?.code == .invalidArguments)
        #expect(failure(try await world.db.deleteZones([ZoneID(zoneName: "Nope")], as: EngineWorld.user)[0].result)?.code == .zoneNotFound)
        #expect(failure(try await world.db.saveZones([ZoneID(zoneName: "_bad")], as: EngineWorld.user)[0].result)?.code == .invalidArguments)
        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        #expect(failure(try await publicDB.saveZones([ZoneID(zoneName: "Nope")], as: EngineWorld.user)[0].result)?.code == .invalidArguments)
        let zones = try world.db.allZones(as: EngineWorld.user)
        #expect(zones.map(\.zoneID.zoneName) == ["_defaultZone", "Lists"])
        #expect(zones[0].capabilities == .defaultZone)
    }
}
