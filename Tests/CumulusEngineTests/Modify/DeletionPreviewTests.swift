import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// What a delete would take, asked before it is made (the console's "deleting this
/// deletes N records"): planned exactly as the delete, appending nothing, and naming only
/// the records the caller may read; likewise a record's referrers.
@Suite("Modify: deletion previews and referrers")
struct DeletionPreviewTests {
    static let alice = EngineWorld.user
    static let bob = EngineWorld.otherUser

    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Owner (
                "___recordID" REFERENCE QUERYABLE,
                GRANT READ TO "_world",
                GRANT WRITE, CREATE TO "_icloud"
            );
            RECORD TYPE Secret (
                "___recordID" REFERENCE QUERYABLE,
                owner REFERENCE QUERYABLE,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
        """

    /// Alice's owner `o` in the public database (anyone signed in may write it, so may
    /// hold a DELETE_SELF reference to it), her secret `a1` and bob's `s`, both going with
    /// it; each may read only their own secret.
    static func world() async throws -> (EngineWorld, Database) {
        let world = try EngineWorld()
        try await world.container.importSchema(
            schema, into: SchemaID(container: EngineWorld.containerID, environment: .development))
        let db = world.container.publicDatabase(container: EngineWorld.containerID)
        let owner = Record.make("Owner", "o", in: .default)
        let goesWith: [String: FieldValue] = ["owner": .reference(Reference(recordID: owner.recordID, action: .deleteSelf))]
        for (records, user) in [([owner, Record.make("Secret", "a1", in: .default, goesWith)], alice),
                                ([Record.make("Secret", "s", in: .default, goesWith)], bob)] {
            let saved = try await db.modify(saving: records, as: user)
            #expect(saved.saveResults.allSatisfy { (try? $0.result.get()) != nil })
        }
        return (world, db)
    }

    @Test("a preview names the record and what its cascade takes that the caller may read, and appends nothing; the delete then takes them all")
    func previewHidesWhatTheCallerCannotRead() async throws {
        let (world, db) = try await Self.world()
        let head = world.container.store.head.sequence
        let owner = RecordID(recordName: "o", zoneID: .default)
        let preview = try await db.previewDeletion(of: owner, as: Self.alice)
        #expect(preview.failure == nil)
        #expect(preview.victims.map(\.recordID.recordName) == ["o", "a1"], "bob's secret goes too, unnamed")
        #expect(preview.victims.last?.cause == .cascade(owner: owner))
        #expect(world.container.store.head.sequence == head, "nothing appended")
        #expect(try db.fetch(owner, as: Self.alice).recordID == owner)

        // A record that is not there: the preview says so, as the delete would; no one
        // signed in: refused as a whole.
        let missing = try await db.previewDeletion(of: RecordID(recordName: "nothing", zoneID: .default), as: Self.alice)
        #expect(missing.failure?.code == .unknownItem && missing.victims.isEmpty)
        await #expect(throws: CumulusError.self) { try await db.previewDeletion(of: owner, as: nil) }

        let deleted = try await db.modify(deleting: [owner], as: Self.alice)
        #expect(deleted.deleteResults.allSatisfy { (try? $0.result.get()) != nil })
        let secret = RecordID(recordName: "s", zoneID: .default)
        #expect(throws: CumulusError.self) { try db.fetch(secret, as: Self.bob) }
    }

    @Test("referrers are the records that refer to one, of those the caller may read")
    func referrersHideWhatTheCallerCannotRead() async throws {
        let (_, db) = try await Self.world()
        let owner = RecordID(recordName: "o", zoneID: .default)
        #expect(try db.referrers(of: owner, as: Self.alice).map(\.recordID.recordName) == ["a1"])
        #expect(try db.referrers(of: owner, as: Self.bob).map(\.recordID.recordName) == ["s"])
        #expect(try db.referrers(of: owner, as: Self.bob).first?.action == .deleteSelf)
        #expect(try db.referrers(of: RecordID(recordName: "a1", zoneID: .default), as: Self.alice).isEmpty)
    }
}
