import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// A zone's deletion is one event that every view projection settles for itself
/// (`Views.apply`): these tests hold that nothing of the zone is left in any table.
@Suite("Zone deletion across the projections")
struct ZoneDeletionTests {
    @Test("deleting a zone leaves no entry under its key in any zone-scoped table, frees what it held and forgets it among the schema's zones; the other zone is untouched")
    func nothingLeftBehind() async throws {
        let world = try EngineWorld()
        let doomed = try await world.makeZone("Doomed")
        let kept = try await world.makeZone("Kept")
        for zone in [doomed, kept] {
            // References both ways, words (pending and kept sides), indexed fields.
            try await world.save([Record.make("List", "list", in: zone, ["title": .string("groceries list")])])
            try await world.save((0..<5).map {
                Record.make("Item", "i\($0)", in: zone, ["title": .string("item \($0) fig"), "list": ref("list", in: zone, .deleteSelf)])
            })
        }
        let environment = world.container.store.environment
        let tables = world.container.views.tables
        let database = world.db.id
        let doomedKey = FeedKeys.zone(database, doomed)
        let keptKey = FeedKeys.zone(database, kept)
        func entries(under zoneKey: [UInt8]) throws -> [ViewTables.Name: Int] {
            try environment.read { txn in
                var counts: [ViewTables.Name: Int] = [:]
                for name in ViewTables.Name.allCases where name.isZoneScoped {
                    var count = 0
                    try txn.scan(tables.table(name), prefix: zoneKey) { _, _ in
                        count += 1
                        return true
                    }
                    if count > 0 { counts[name] = count }
                }
                return counts
            }
        }
        let before = try entries(under: doomedKey)
        for name in [ViewTables.Name.records, .byType, .refsIn, .refsOut, .fieldIndex] {
            #expect(before[name] != nil, "the zone had \(name) entries to delete")
        }
        let keptBefore = try entries(under: keptKey)
        let keptBytes = try environment.read { txn in
            var bytes = 0
            try txn.scan(tables.records, prefix: keptKey) { _, value in
                bytes += value.count
                return true
            }
            return Int64(bytes)
        }
        let bytesBefore = try environment.read { try world.container.views.recordBytes(ofUser: EngineWorld.user, container: EngineWorld.containerID, in: $0) }
        #expect(bytesBefore > keptBytes)

        let results = try await world.db.deleteZones([doomed], as: EngineWorld.user)
        _ = try results[0].result.get()

        #expect(try entries(under: doomedKey).isEmpty)
        #expect(try entries(under: keptKey) == keptBefore)
        let bytesAfter = try environment.read { try world.container.views.recordBytes(ofUser: EngineWorld.user, container: EngineWorld.containerID, in: $0) }
        #expect(bytesAfter == keptBytes, "only the kept zone's records still count")
        let schemaZones = try environment.read { txn in
            var zones: [[UInt8]] = []
            try txn.scan(tables.schemaZones, prefix: []) { key, _ in
                zones.append(Array(key.suffix(FeedKeys.length)))
                return true
            }
            return zones
        }
        #expect(!schemaZones.contains(doomedKey) && schemaZones.contains(keptKey))
        try world.checkLiveAndRebuilt {}
    }
}
