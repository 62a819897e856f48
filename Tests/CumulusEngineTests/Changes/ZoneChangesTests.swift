import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

@Suite("Change feeds and tokens")
struct ZoneChangesTests {
    /// Pages through a zone's whole feed; returns changed records by name (each must
    /// appear once) and deletions.
    func drain(_ world: EngineWorld, _ zone: ZoneID, since token: ChangeToken? = nil, limit: Int)
        async throws -> (changed: [String: Record], deleted: [String: RecordDeletion], duplicates: Int, token: ChangeToken?)
    {
        var changed: [String: Record] = [:]
        var deleted: [String: RecordDeletion] = [:]
        var duplicates = 0
        var token = token
        var pages = 0
        while true {
            let page = try await world.db.fetchZoneChanges(zone, since: token, resultsLimit: limit, as: EngineWorld.user)
            #expect(page.changed.count + page.deleted.count <= limit)
            for record in page.changed {
                if changed.updateValue(record, forKey: record.recordID.recordName) != nil { duplicates += 1 }
                deleted[record.recordID.recordName] = nil
            }
            for deletion in page.deleted {
                if deleted.updateValue(deletion, forKey: deletion.recordID.recordName) != nil { duplicates += 1 }
                changed[deletion.recordID.recordName] = nil
            }
            token = page.token
            pages += 1
            if !page.moreComing || pages > 10_000 { break }
        }
        return (changed, deleted, duplicates, token)
    }

    @Test("paging 10,000 changes 100 at a time: each changed record once at its latest version, every delete")
    func pagingThroughTenThousandChanges() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        // 4,000 creates, 3,000 updates, 3,000 deletes: 10,000 changes.
        for batch in 0..<10 {
            try await world.save((0..<400).map { Record.make("T", "r\(batch * 400 + $0)", in: zone, ["v": .int64(0)]) })
        }
        for batch in 0..<8 {
            let count = batch == 7 ? 200 : 400
            try await world.save((0..<count).map { Record.make("T", "r\(batch * 400 + $0)", in: zone, ["v": .int64(1)]) })
        }
        for batch in 0..<8 {
            let count = batch == 7 ? 200 : 400
            try await world.delete((0..<count).map { id("r\(1_000 + batch * 400 + $0)", in: zone) })
        }
        let result = try await drain(world, zone, limit: 100)
        #expect(result.duplicates == 0)
        #expect(result.deleted.count == 3_000)
        #expect(result.changed.count == 1_000)
        for name in result.changed.keys {
            let index = Int(name.dropFirst()) ?? -1
            #expect(index < 1_000 || index >= 4_000 - 0 && false || index < 1_000)
            #expect(result.changed[name]?["v"] == .int64(1))
        }
        #expect(result.deleted.values.allSatisfy { $0.recordType == "T" && $0.cause == .direct })
        // Nothing new: an empty page, same position, no more coming.
        let again = try await world.db.fetchZoneChanges(zone, since: result.token, as: EngineWorld.user)
        #expect(again.changed.isEmpty && again.deleted.isEmpty && !again.moreComing)
    }

    @Test("changes since a token: only what came after, with cascades' causes and the client's token echoed")
    func incrementalChanges() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("List", "l", in: zone), Record.make("Item", "i", in: zone, ["l": ref("l", in: zone, .deleteSelf)])])
        let first = try await world.db.fetchZoneChanges(zone, as: EngineWorld.user)
        #expect(Set(first.changed.map(\.recordID.recordName)) == ["l", "i"])
        _ = try await world.db.modify(deleting: [id("l", in: zone)], clientChangeTokenData: [7, 7], as: EngineWorld.user)
        let second = try await world.db.fetchZoneChanges(zone, since: first.token, as: EngineWorld.user)
        #expect(second.changed.isEmpty)
        #expect(second.deleted.map(\.recordID.recordName) == ["l", "i"])
        #expect(second.deleted.last?.cause == .cascade(owner: id("l", in: zone)))
        #expect(second.deleted.last?.recordType == "Item")
        #expect(second.clientChangeTokenData == [7, 7])
    }

    @Test("a token survives a restart")
    func tokenSurvivesRestart() async throws {
        let temporary = TemporaryDirectory("token")
        defer { temporary.remove() }
        let path = temporary.path
        let zone = ZoneID(zoneName: "Z", ownerName: EngineWorld.user)
        let token: ChangeToken
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.user)
            _ = try await db.saveZones([zone], as: EngineWorld.user)
            _ = try await db.modify(saving: [Record.make("T", "a", in: zone)], as: EngineWorld.user)
            token = try await db.fetchZoneChanges(zone, as: EngineWorld.user).token
            _ = try await db.modify(saving: [Record.make("T", "b", in: zone)], as: EngineWorld.user)
            container.close()
        }
        let container = try Container(path: path)
        let db = container.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.user)
        let page = try await db.fetchZoneChanges(zone, since: token, as: EngineWorld.user)
        #expect(page.changed.map(\.recordID.recordName) == ["b"])
    }

    @Test("tokens from a re-created zone, another data directory, or with a flipped byte are changeTokenExpired")
    func expiredTokens() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("T", "a", in: zone)])
        let token = try await world.db.fetchZoneChanges(zone, as: EngineWorld.user).token
        func code(_ token: ChangeToken, _ db: Database) async -> CumulusError.Code? {
            do {
                _ = try await db.fetchZoneChanges(zone, since: token, as: EngineWorld.user)
                return nil
            } catch let error as CumulusError {
                return error.code
            } catch {
                return .internalError
            }
        }
        for index in [0, 5, token.bytes.count / 2, token.bytes.count - 1] {
            var bytes = token.bytes
            bytes[index] ^= 0x40
            #expect(await code(ChangeToken(bytes: bytes), world.db) == .changeTokenExpired)
        }
        let other = try EngineWorld("otherDirectory")
        _ = try await other.makeZone()
        #expect(await code(token, other.db) == .changeTokenExpired)
        _ = try await world.db.deleteZones([zone], as: EngineWorld.user)
        _ = try await world.makeZone()
        #expect(await code(token, world.db) == .changeTokenExpired)
        // A fresh start works, and the new incarnation starts empty.
        let fresh = try await world.db.fetchZoneChanges(zone, as: EngineWorld.user)
        #expect(fresh.changed.isEmpty && fresh.deleted.isEmpty)
    }

    @Test("the default zone has a feed too, and database changes list zones changed and deleted")
    func databaseChanges() async throws {
        let world = try EngineWorld()
        try await world.save([Record.make("T", "d", in: .default)])
        let defaultFeed = try await world.db.fetchZoneChanges(.default, as: EngineWorld.user)
        #expect(defaultFeed.changed.map(\.recordID.recordName) == ["d"])
        let a = try await world.makeZone("A")
        let b = try await world.makeZone("B")
        let start = try await world.db.fetchDatabaseChanges(as: EngineWorld.user)
        #expect(Set(start.changedZones.map(\.zoneName)) == ["_defaultZone", "A", "B"])
        try await world.save([Record.make("T", "x", in: a)])
        _ = try await world.db.deleteZones([b], as: EngineWorld.user)
        let next = try await world.db.fetchDatabaseChanges(since: start.token, as: EngineWorld.user)
        #expect(next.changedZones == [a])
        #expect(next.deletedZones == [b])
        var paged: [ZoneID] = []
        var token: ChangeToken?
        while true {
            let page = try await world.db.fetchDatabaseChanges(since: token, resultsLimit: 1, as: EngineWorld.user)
            paged += page.changedZones + page.deletedZones
            token = page.token
            if !page.moreComing { break }
        }
        #expect(Set(paged.map(\.zoneName)) == ["_defaultZone", "A", "B"])
        let zoneToken = try await world.db.fetchZoneChanges(a, as: EngineWorld.user).token
        await #expect(throws: CumulusError.self) { try await world.db.fetchDatabaseChanges(since: zoneToken, as: EngineWorld.user) }
    }
}
