import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

/// What a reference may do to another user's record in the public database
/// (`Docs/SECURITY.md`, "Public records"): anyone may hold a record there, so a
/// reference that would give its holder a say over the target, or change it, needs
/// the right to write the target.
@Suite("Public database: references to records of others")
struct PublicReferenceTests {
    typealias Roles = SecurityRoleTests

    static func post(_ name: String, _ fields: [String: FieldValue] = [:]) -> Record {
        Record.make("Post", name, in: .default, fields.merging(["text": .string(name)]) { mine, _ in mine })
    }

    static func reply(_ name: String, to target: String, _ action: Reference.Action) -> Record {
        post(name, ["inReplyTo": ref(target, in: .default, action)])
    }

    @Test("a user who may not write a public record cannot hold a VALIDATE or DELETE_SELF reference to it")
    func validateAndDeleteSelfNeedWrite() async throws {
        let (world, db) = try await Roles.world()
        defer { withExtendedLifetime(world) {} }
        _ = try await db.modify(saving: [Self.post("alices")], as: Roles.alice)
        for action in [Reference.Action.validate, .deleteSelf] {
            let bobs = try await db.modify(
                saving: [Self.reply("bob-\(action)", to: "alices", action)], savePolicy: .allKeys, as: Roles.bob)
            let error = failure(bobs.saveResults[0].result)
            #expect(error?.code == .permissionFailure, "\(action)")
            #expect(error?.field == "inReplyTo", "\(action)")
        }
        // The creator and a role with WRITE on the type may hold either.
        let alices = try await db.modify(
            saving: [Self.reply("alice-validate", to: "alices", .validate)], savePolicy: .allKeys, as: Roles.alice)
        #expect(failure(alices.saveResults[0].result) == nil)
        let carols = try await db.modify(
            saving: [Self.reply("carol-owned", to: "alices", .deleteSelf)], savePolicy: .allKeys, as: Roles.carol)
        #expect(failure(carols.saveResults[0].result) == nil)
        // Bob may hold them to his own records, one saved in the same operation too.
        let own = try await db.modify(
            saving: [Self.reply("bob-child", to: "bob-root", .deleteSelf), Self.post("bob-root")], savePolicy: .allKeys,
            as: Roles.bob)
        #expect(own.partialFailure == nil)
    }

    @Test("a NONE reference from a user who may not write the target is kept, and the target's change tag does not move")
    func noneReferenceLeavesTheTargetAlone() async throws {
        let (world, db) = try await Roles.world()
        defer { withExtendedLifetime(world) {} }
        _ = try await db.modify(saving: [Self.post("alices")], as: Roles.alice)
        let before = try db.fetch(RecordID(recordName: "alices"), as: Roles.alice).recordChangeTag
        let bobs = try await db.modify(saving: [Self.reply("bobs", to: "alices", .none)], savePolicy: .allKeys, as: Roles.bob)
        #expect(bobs.partialFailure == nil)
        #expect(try db.fetch(RecordID(recordName: "alices"), as: Roles.alice).recordChangeTag == before)
        // Nor when Bob lets go of it again.
        _ = try await db.modify(deleting: [RecordID(recordName: "bobs")], as: Roles.bob)
        #expect(try db.fetch(RecordID(recordName: "alices"), as: Roles.alice).recordChangeTag == before)
        // The creator's own reference still moves it, as CloudKit documents.
        _ = try await db.modify(saving: [Self.reply("alices-2", to: "alices", .none)], savePolicy: .allKeys, as: Roles.alice)
        let bumped = try db.fetch(RecordID(recordName: "alices"), as: Roles.alice).recordChangeTag
        #expect(bumped != before)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try db.fetch(RecordID(recordName: "alices"), as: Roles.alice).recordChangeTag == bumped)
        }
    }

    @Test("with Bob's references refused, Alice deletes her record; a moderator's DELETE_SELF child goes with it")
    func creatorStillDeletes() async throws {
        let (world, db) = try await Roles.world()
        defer { withExtendedLifetime(world) {} }
        _ = try await db.modify(saving: [Self.post("alices")], as: Roles.alice)
        _ = try await db.modify(saving: [Self.reply("bobs", to: "alices", .validate)], savePolicy: .allKeys, as: Roles.bob)
        _ = try await db.modify(saving: [Self.reply("carols", to: "alices", .deleteSelf)], savePolicy: .allKeys, as: Roles.carol)
        let deleted = try await db.modify(deleting: [RecordID(recordName: "alices")], as: Roles.alice)
        #expect(deleted.partialFailure == nil)
        let gone = try db.fetch([RecordID(recordName: "alices"), RecordID(recordName: "carols")], as: Roles.alice)
        #expect(gone.allSatisfy { failure($0.result)?.code == .unknownItem })
    }
}
