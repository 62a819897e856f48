import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// Asset reference counts in the views and collection (issue 17): a file goes only
/// when no current record, no record version in the retained log and no upload
/// inside its grace can still want it.
@Suite("Asset counts and collection")
struct AssetCollectorTests {
    static func bytes(_ seed: Int, count: Int = 5_000) -> [UInt8] { (0..<count).map { UInt8(($0 * seed + seed) % 251) } }

    static func checksum(_ asset: Asset) throws -> AssetChecksum { try #require(AssetChecksum(hex: asset.fileChecksum)) }

    static func references(_ world: EngineWorld, _ asset: Asset) throws -> AssetReferences? {
        let checksum = try checksum(asset)
        return try world.container.store.environment.read { try world.container.views.assetReferences(checksum, in: $0) }
    }

    @Test("an asset held only by an old version is kept while that version is in the retained log, collected once retention drops it; a deleted record's likewise")
    func oldVersionsKeepTheirAssets() async throws {
        let world = try EngineWorld()
        let first = try await world.db.storeAsset(Self.bytes(3), as: EngineWorld.user)
        let second = try await world.db.storeAsset(Self.bytes(5), as: EngineWorld.user)
        try await world.save([Record.make("Photo", "r", in: .default, ["image": .asset(first)])])
        let savedFirst = world.container.store.head.sequence
        try await world.save([Record.make("Photo", "r", in: .default, ["image": .asset(second)])])
        let collector = AssetCollector(container: world.container, grace: .zero)

        var report = try collector.collect()
        #expect(report.collected.isEmpty && report.referenced == 2, "the old version is still in the log")
        #expect(try Self.references(world, first) == AssetReferences(count: 0, lastSaved: savedFirst))

        // Retention drops the commit that saved the version holding the first file.
        #expect(try world.container.store.dropCommits(through: savedFirst, limit: 1_000) > 0)
        report = try collector.collect()
        #expect(report.collected == [try Self.checksum(first)])
        #expect(!world.container.assets.contains(try Self.checksum(first)))
        #expect(world.container.assets.contains(try Self.checksum(second)), "a current record holds it")

        // Deleted: the last version holding it stays reachable until retention drops it too.
        try await world.delete([RecordID(recordName: "r")])
        report = try collector.collect()
        #expect(report.collected.isEmpty && report.referenced == 1)
        let deletion = world.container.store.head.sequence
        try await world.save([Record.make("Note", "later", in: .default)])
        #expect(try world.container.store.dropCommits(through: deletion, limit: 1_000) > 0)
        report = try collector.collect()
        #expect(report.collected == [try Self.checksum(second)])
        #expect(try world.container.assets.storedChecksums().isEmpty)
    }

    @Test("an upload no record refers to is collected only after its grace; the same bytes uploaded again restart it")
    func unreferencedUploadsWaitForTheirGrace() async throws {
        let world = try EngineWorld()
        let asset = try await world.db.storeAsset(Self.bytes(7), as: EngineWorld.user)
        let checksum = try Self.checksum(asset)
        let collector = AssetCollector(container: world.container, grace: .seconds(1_200))
        let now = Date()

        var report = try collector.collect(now: now)
        #expect(report.young == 1 && report.collected.isEmpty)
        // Stored an hour ago, as far as the collector can tell; uploaded again now.
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-3_600)], ofItemAtPath: world.container.assets.path(of: checksum))
        _ = try await world.db.storeAsset(Self.bytes(7), as: EngineWorld.user)
        report = try collector.collect(now: now.addingTimeInterval(60))
        #expect(report.young == 1 && report.collected.isEmpty, "the second upload's receipt must still find the file")

        report = try collector.collect(now: now.addingTimeInterval(1_300))
        #expect(report.collected == [checksum])
        #expect(!world.container.assets.contains(checksum))
    }

    @Test("counts follow saves, list fields, replaced values, deletes and zone deletion; verify finds the views equal to a rebuild")
    func countsFollowTheRecords() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let a = try await world.db.storeAsset(Self.bytes(11), as: EngineWorld.user)
        let b = try await world.db.storeAsset(Self.bytes(13), as: EngineWorld.user)
        try await world.save([
            Record.make("Photo", "one", in: zone, ["image": .asset(a), "gallery": .list([.asset(a), .asset(b)])]),
            Record.make("Photo", "two", in: zone, ["image": .asset(a)]),
            Record.make("Photo", "three", in: .default, ["image": .asset(b)]),
        ])
        #expect(try Self.references(world, a)?.count == 2, "each record counts once")
        #expect(try Self.references(world, b)?.count == 2)
        // The stored record keeps no receipt.
        let stored = try world.db.fetch(RecordID(recordName: "one", zoneID: zone), as: EngineWorld.user)
        #expect(stored["image"] == .asset(Asset(fileChecksum: a.fileChecksum, size: a.size, referenceChecksum: a.referenceChecksum)))

        try await world.delete([RecordID(recordName: "two", zoneID: zone)])
        #expect(try Self.references(world, a)?.count == 1)
        _ = try await world.db.deleteZones([zone], as: EngineWorld.user)
        #expect(try Self.references(world, a)?.count == 0)
        #expect(try Self.references(world, b)?.count == 1, "still held in the default zone")
        let report = try world.container.verify()
        #expect(report.isHealthy, "\(report.lines)")
        #expect(report.assetsChecked == 2, "both are still held by versions in the log")
    }

    @Test("verify names an asset whose file was altered or removed, and a record holding it")
    func verifyNamesDamagedAssets() async throws {
        let world = try EngineWorld()
        let a = try await world.db.storeAsset(Self.bytes(17), as: EngineWorld.user)
        try await world.save([Record.make("Photo", "held", in: .default, ["image": .asset(a)])])
        #expect(try world.container.verify().isHealthy)
        let path = world.container.assets.path(of: try Self.checksum(a))
        try Data("not the photo".utf8).write(to: URL(fileURLWithPath: path))
        var report = try world.container.verify()
        #expect(!report.isHealthy)
        #expect(report.assetProblems.count == 1)
        #expect(report.assetProblems.first?.contains(a.fileChecksum) == true)
        #expect(report.assetProblems.first?.contains("held") == true)
        try FileManager.default.removeItem(atPath: path)
        report = try world.container.verify()
        #expect(report.assetProblems.first?.contains("missing") == true)
    }

    @Test("a save may not name bytes it never uploaded; the Swift API's own upload and a fetched record re-saved are accepted")
    func savesNeedProof() async throws {
        let world = try EngineWorld()
        let forged = Asset(fileChecksum: String(repeating: "ab", count: 32), size: 3)
        let result = try await world.db.modify(
            saving: [Record.make("Photo", "f", in: .default, ["image": .asset(forged)])], as: EngineWorld.user)
        #expect(throws: CumulusError.self) { try result.saveResults[0].result.get() }
        let real = try await world.db.storeAsset(Self.bytes(19), as: EngineWorld.user)
        try await world.save([Record.make("Photo", "f", in: .default, ["image": .asset(real)])])
        var fetched = try world.db.fetch(RecordID(recordName: "f"), as: EngineWorld.user)
        fetched["caption"] = .string("again")
        try await world.save([fetched])
        // Another user's receipt is refused in their own database.
        let other = world.container.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.otherUser)
        let stolen = try await other.modify(
            saving: [Record.make("Photo", "s", in: .default, ["image": .asset(real)])], as: EngineWorld.otherUser)
        #expect(throws: CumulusError.self) { try stolen.saveResults[0].result.get() }
    }
}
