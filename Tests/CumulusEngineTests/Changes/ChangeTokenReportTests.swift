import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// Reading a client's change token (the console's change-token page): what it names, how
/// far behind its feed it is, what it covers last and when, and whether this node would
/// take it, with the reason a changes request would give.
@Suite("Change tokens, inspected")
struct ChangeTokenReportTests {
    @Test("a zone token names its zone, its place in the feed and the commit it covers; later commits put it behind; nothing refuses it")
    func zoneToken() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        _ = try await world.save([Record.make("Item", "a", in: zone)])
        let page = try await world.db.fetchZoneChanges(zone, as: EngineWorld.user)
        let token = page.token
        let head = world.container.store.head.sequence
        var report = try world.container.inspect(token)
        #expect(report.isZoneToken && report.zoneID == zone && report.database == world.db.id)
        #expect(report.position == report.feedHead && report.position == 2, "created, then one save")
        #expect(report.lastCovered == head && report.lastCoveredTime != nil)
        #expect(report.sameLog && report.epoch == world.container.store.epoch && report.epochEnd == nil)
        #expect(report.currentIncarnation == report.incarnation)
        #expect(report.refusal == nil)

        _ = try await world.save([Record.make("Item", "b", in: zone), Record.make("Item", "c", in: zone)], atomic: false)
        report = try world.container.inspect(token)
        #expect(report.feedHead > report.position && report.refusal == nil)
    }

    @Test("a zone deleted and made again, or gone, refuses the token as a changes request would; a database token is read too")
    func refusals() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let token = try await world.db.fetchZoneChanges(zone, as: EngineWorld.user).token
        let databaseToken = try await world.db.fetchDatabaseChanges(as: EngineWorld.user).token
        _ = try await world.db.deleteZones([zone], as: EngineWorld.user)
        let gone = try world.container.inspect(token)
        #expect(gone.currentIncarnation == nil && gone.refusal?.code == .zoneNotFound)
        _ = try await world.makeZone()
        let remade = try world.container.inspect(token)
        #expect(remade.currentIncarnation != remade.incarnation)
        #expect(remade.refusal?.code == .changeTokenExpired && remade.refusal?.message.contains("created again") == true)
        // The same reason a client gets.
        await #expect(throws: CumulusError.self) { _ = try await world.db.fetchZoneChanges(zone, since: token, as: EngineWorld.user) }

        let database = try world.container.inspect(databaseToken)
        #expect(!database.isZoneToken && database.zoneID == nil && database.refusal == nil)
        #expect(database.feedHead > database.position, "the zone's deletion and creation came after it")

        var damaged = token.bytes
        damaged[damaged.count / 2] ^= 0x01
        #expect(throws: CumulusError.self) { try world.container.inspect(ChangeToken(bytes: damaged)) }
    }
}
