import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// The bytes current records hold per payer and per container (issue 40, item 9):
/// the `usage` view follows every kind of change, agrees with a count made from the
/// records themselves, and comes back the same from a rebuild; the record quotas
/// refuse saves, never deletions.
@Suite("Record bytes and quotas")
struct RecordUsageTests {
    static let bob = EngineWorld.otherUser

    /// What the `usage` view should hold, counted from the stored records alone: each
    /// record's stored bytes and the files it holds (each once), by creator (in these
    /// tests every private record is its owner's own, so the creator is the payer).
    static func counted(_ world: EngineWorld) throws -> (byUser: [String: Int64], total: Int64) {
        try world.container.store.environment.read { txn in
            var byUser: [String: Int64] = [:]
            var total: Int64 = 0
            try txn.scan(world.container.views.tables.records, prefix: []) { _, value in
                let record = try RecordCodec.decode(value)
                var files: [String: Int64] = [:]
                record.forEachFieldAsset { files[$0.fileChecksum] = $0.size }
                let bytes = Int64(value.count) + files.values.reduce(0, +)
                byUser[record.creatorUserRecordID?.recordName ?? "", default: 0] += bytes
                total += bytes
                return true
            }
            return (byUser, total)
        }
    }

    /// What the `usage` view holds for the test container.
    static func viewed(_ world: EngineWorld) throws -> (byUser: [String: Int64], total: Int64) {
        try world.container.store.environment.read { txn in
            let views = world.container.views
            var byUser: [String: Int64] = [:]
            for user in [EngineWorld.user, bob] {
                let bytes = try views.recordBytes(ofUser: user, container: EngineWorld.containerID, in: txn)
                if bytes != 0 { byUser[user] = bytes }
            }
            return (byUser, try views.recordBytes(ofContainer: EngineWorld.containerID, in: txn))
        }
    }

    static func expectAgreement(_ world: EngineWorld, _ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let counted = try counted(world)
        let viewed = try viewed(world)
        #expect(viewed.byUser == counted.byUser, "\(step): per user", sourceLocation: sourceLocation)
        #expect(viewed.total == counted.total, "\(step): the container", sourceLocation: sourceLocation)
    }

    static func text(_ count: Int) -> FieldValue { .string(String(repeating: "x", count: count)) }

    @Test("usage follows saves, growing and shrinking updates, assets, tag bumps, cascades and zone deletion, private and public; a rebuild agrees")
    func usageFollowsTheRecords() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let photo = try await world.db.storeAsset((0..<3_000).map { UInt8($0 % 251) }, as: EngineWorld.user)
        try await world.save([
            Record.make("Note", "a", in: zone, ["body": Self.text(500)]),
            Record.make("Note", "b", in: zone, ["body": Self.text(50), "owner": ref("a", in: zone, .deleteSelf)]),
            Record.make("Note", "c", in: zone, ["file": .asset(photo)]),
            Record.make("Photo", "p", in: .default, ["image": .asset(photo), "again": .list([.asset(photo)])]),
        ])
        try Self.expectAgreement(world, "first saves")
        #expect(try Self.viewed(world).byUser[EngineWorld.user] ?? 0 > 3_550, "the file and the text count")

        // Enough commits that change tags grow a digit, and tag bumps change sizes.
        for round in 0..<40 {
            try await world.save([Record.make("Note", "r\(round)", in: zone, ["to": ref("a", in: zone)])])
        }
        try await world.save([Record.make("Note", "a", in: zone, ["body": Self.text(2_000)])])
        try Self.expectAgreement(world, "growing update and bumps")
        try await world.save([Record.make("Note", "a", in: zone, ["body": Self.text(10)])])
        try await world.save([Record.make("Photo", "p", in: .default, ["caption": Self.text(5)])])
        try Self.expectAgreement(world, "shrinking updates, the file dropped")

        // Bob's public records are his; Alice's private ones stay hers.
        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        _ = try await publicDB.modify(
            saving: [Record.make("Post", "hello", in: .default, ["body": Self.text(700)])], savePolicy: .allKeys,
            atomic: false, as: Self.bob)
        try Self.expectAgreement(world, "a public record")
        #expect(try Self.viewed(world).byUser[Self.bob] ?? 0 > 700)

        // A cascade: deleting a takes b (deleteSelf) with it.
        try await world.delete([id("a", in: zone)])
        try Self.expectAgreement(world, "a cascade")
        _ = try await world.db.deleteZones([zone], as: EngineWorld.user)
        try Self.expectAgreement(world, "zone deletion")
        _ = try await publicDB.modify(deleting: [RecordID(recordName: "hello")], atomic: false, as: Self.bob)
        try world.checkLiveAndRebuilt { try Self.expectAgreement(world, "after all") }
        #expect(try Self.viewed(world).byUser[Self.bob] == nil, "nothing left of bob's")
    }

    /// Saves `records` into `db` as `actor` under `quota`: each item's error code, or `nil`.
    static func save(
        _ records: [Record], in db: Database, as actor: String, quota: RecordQuota
    ) async throws -> [CumulusError.Code?] {
        let result = try await db.modify(
            ModifyOperation(saves: records.map { RecordSave($0, mode: SavePolicy.allKeys.mode) }, atomic: false, recordQuota: quota), as: actor)
        return result.saveResults.map { item -> CumulusError.Code? in failure(item.result)?.code }
    }

    @Test("a save once the payer holds the quota is quotaExceeded, in every database of the container; deletes pass and make room")
    func userQuotaRefusesSaves() async throws {
        let world = try EngineWorld()
        let quota = RecordQuota(bytesPerUser: 2_000, bytesPerContainer: 1_000_000)
        var saved = 0
        var refused: CumulusError.Code?
        while refused == nil, saved < 20 {
            let codes = try await Self.save(
                [Record.make("Note", "n\(saved)", in: .default, ["body": Self.text(400)])], in: world.db,
                as: EngineWorld.user, quota: quota)
            if let code = codes[0] { refused = code } else { saved += 1 }
        }
        #expect(refused == .quotaExceeded)
        let held = try Self.viewed(world).byUser[EngineWorld.user] ?? 0
        #expect(saved >= 2 && held >= 2_000, "\(saved) notes hold \(held) bytes")
        #expect(held - held / Int64(saved) < 2_000, "the last save began under the quota: over by at most one")

        // The same user in the public database of the same container: refused too.
        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        #expect(
            try await Self.save([Record.make("Post", "x", in: .default)], in: publicDB, as: EngineWorld.user, quota: quota)
                == [.quotaExceeded])
        // Another user is not.
        #expect(try await Self.save([Record.make("Post", "y", in: .default)], in: publicDB, as: Self.bob, quota: quota) == [nil])

        // Deleting is always allowed, and frees room for the next save.
        let deleted = try await world.db.modify(
            ModifyOperation(deletes: [RecordDelete(RecordID(recordName: "n0")), RecordDelete(RecordID(recordName: "n1"))],
                recordQuota: quota), as: EngineWorld.user)
        #expect(deleted.deleteResults.allSatisfy { (try? $0.result.get()) != nil })
        #expect(
            try await Self.save(
                [Record.make("Note", "again", in: .default, ["body": Self.text(400)])], in: world.db, as: EngineWorld.user,
                quota: quota) == [nil])
        try Self.expectAgreement(world, "after the quota")
    }

    @Test("once a container's records hold its quota, every user's saves are quotaExceeded")
    func containerQuotaRefusesSaves() async throws {
        let world = try EngineWorld()
        let quota = RecordQuota(bytesPerUser: 1_000_000, bytesPerContainer: 1_500)
        let notes = (0..<5).map { Record.make("Note", "n\($0)", in: .default, ["body": Self.text(400)]) }
        let codes = try await Self.save(notes, in: world.db, as: EngineWorld.user, quota: quota)
        // Each save sees the ones before it in the same operation only once committed:
        // the quota is checked against the views, so one operation goes through whole.
        #expect(codes.allSatisfy { $0 == nil }, "\(codes)")
        let bobs = world.container.privateDatabase(container: EngineWorld.containerID, user: Self.bob)
        #expect(
            try await Self.save([Record.make("Note", "b", in: .default)], in: bobs, as: Self.bob, quota: quota)
                == [.quotaExceeded])
        // Another container is not touched.
        let other = world.container.privateDatabase(container: "iCloud.com.example.other", user: Self.bob)
        #expect(try await Self.save([Record.make("Note", "b", in: .default)], in: other, as: Self.bob, quota: quota) == [nil])
    }
}
