import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Testing

@Suite("Rebuild and verify")
struct VerifyTests {
    @Test("verify passes on a healthy directory and names the table and key after a view entry is altered")
    func verifyFindsTampering() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save((0..<30).map { Record.make("T", "r\($0)", in: zone, ["n": .int64(Int64($0))]) })
        #expect(try world.container.verify().isHealthy)
        // Alter one stored record behind the engine's back.
        let views = world.container.views
        let key = ViewKeys.record(FeedKeys.zone(world.db.id, zone), "r7")
        try world.container.store.environment.write { txn in
            guard var bytes = try txn.get(views.tables.records, key: key) else { return }
            bytes[bytes.count - 1] ^= 1
            try txn.put(views.tables.records, key: key, value: bytes)
        }
        let report = try world.container.verify()
        #expect(!report.isHealthy)
        let bad = report.tables.filter { !$0.matches }
        #expect(bad.map(\.live.table) == ["records"])
        #expect(bad.first?.firstDifference == key.map { String(format: "%02x", $0) }.joined())
        // A rebuild repairs it.
        try world.container.rebuild()
        #expect(try world.container.verify().isHealthy)
        #expect(try world.fetch(id("r7", in: zone))["n"] == .int64(7))
    }

    @Test("verify reports a damaged log frame")
    func verifyFindsLogDamage() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("T", "a", in: zone)])
        let store = world.container.store
        guard var frame = try store.frameBytes(2) else { return }
        frame[10] ^= 0xFF
        let log = try store.environment.table("log")
        try store.environment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(2)), value: frame) }
        let report = try? world.container.verify()
        #expect(report?.chain.firstBad == 2 || report == nil)
    }
}
