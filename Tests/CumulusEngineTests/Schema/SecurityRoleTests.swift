import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// Security roles from the schema, enforced in the public database (`Docs/SCHEMA.md`, "Security roles (public database)").
@Suite("Schema: security roles")
struct SecurityRoleTests {
    static let alice = EngineWorld.user
    static let bob = EngineWorld.otherUser
    static let carol = "_carol000000000000000000000000003"

    static let schema = """
        DEFINE SCHEMA
            CREATE ROLE Moderator;
            RECORD TYPE Post (
                "___recordID" REFERENCE QUERYABLE,
                text STRING,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world",
                GRANT WRITE TO Moderator
            );
            RECORD TYPE Secret (
                "___recordID" REFERENCE QUERYABLE,
                text STRING,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
            RECORD TYPE Announcement (
                "___recordID" REFERENCE QUERYABLE,
                text STRING,
                GRANT READ TO "_world",
                GRANT CREATE, WRITE TO Moderator
            );
        """

    static func world() async throws -> (EngineWorld, Database) {
        let world = try EngineWorld()
        let id = SchemaID(container: EngineWorld.containerID, environment: .development)
        try await world.container.importSchema(schema, into: id)
        try await world.container.assignRoles(["Moderator"], to: carol, in: id)
        return (world, world.container.publicDatabase(container: EngineWorld.containerID))
    }

    static func post(_ type: String, _ name: String, _ text: String) -> Record {
        Record.make(type, name, in: .default, ["text": .string(text)])
    }

    @Test("a custom role may change and delete a type that _creator alone may not, other users may not")
    func customRoleWrites() async throws {
        let (world, db) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        _ = try await db.modify(saving: [Self.post("Post", "p1", "hello"), Self.post("Post", "p2", "bye")], as: Self.alice)
        // Bob (signed in, not the creator, no role) may not change Alice's post.
        let bobs = try await db.modify(saving: [Self.post("Post", "p1", "hacked")], savePolicy: .allKeys, as: Self.bob)
        #expect(failure(bobs.saveResults[0].result)?.code == .permissionFailure)
        let bobDelete = try await db.modify(deleting: [RecordID(recordName: "p2")], atomic: false, as: Self.bob)
        #expect(failure(bobDelete.deleteResults[0].result)?.code == .permissionFailure)
        // Carol holds Moderator, which has WRITE on Post.
        let carols = try await db.modify(saving: [Self.post("Post", "p1", "moderated")], savePolicy: .allKeys, as: Self.carol)
        #expect(try carols.saveResults[0].result.get()["text"] == .string("moderated"))
        let carolDelete = try await db.modify(deleting: [RecordID(recordName: "p2")], atomic: false, as: Self.carol)
        #expect(failure(carolDelete.deleteResults[0].result) == nil)
        // The creator still may.
        let alices = try await db.modify(saving: [Self.post("Post", "p1", "mine again")], savePolicy: .allKeys, as: Self.alice)
        #expect(failure(alices.saveResults[0].result) == nil)
    }

    @Test("CREATE granted only to a role: others may not create the type")
    func createNeedsGrant() async throws {
        let (world, db) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        let alices = try await db.modify(saving: [Self.post("Announcement", "a1", "news")], as: Self.alice)
        #expect(failure(alices.saveResults[0].result)?.code == .permissionFailure)
        let carols = try await db.modify(saving: [Self.post("Announcement", "a1", "news")], as: Self.carol)
        #expect(failure(carols.saveResults[0].result) == nil)
        // Everyone reads it, signed in or not.
        #expect(try db.fetch(RecordID(recordName: "a1"), as: nil)["text"] == .string("news"))
    }

    @Test("READ granted to _creator alone: others cannot fetch it, queries show each user their own")
    func creatorOnlyReads() async throws {
        let (world, db) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        _ = try await db.modify(saving: [Self.post("Secret", "s1", "alice's")], as: Self.alice)
        _ = try await db.modify(saving: [Self.post("Secret", "s2", "bob's")], as: Self.bob)
        #expect(try db.fetch(RecordID(recordName: "s1"), as: Self.alice)["text"] == .string("alice's"))
        let denied = try db.fetch([RecordID(recordName: "s1")], as: Self.bob)
        #expect(failure(denied[0].result)?.code == .permissionFailure)
        #expect(throws: CumulusError.self) { try db.fetch(RecordID(recordName: "s1"), as: nil) }
        let mine = try db.query(Query(recordType: "Secret"), in: .default, as: Self.alice)
        #expect(mine.records.map(\.recordID.recordName) == ["s1"])
        #expect(throws: CumulusError.self) { try db.query(Query(recordType: "Secret"), in: .default, as: nil) }
    }

    @Test("a type without grants keeps CloudKit's defaults: _world reads, _icloud creates, _creator writes")
    func defaultsWithoutGrants() async throws {
        let world = try EngineWorld()
        let db = world.container.publicDatabase(container: EngineWorld.containerID)
        _ = try await db.modify(saving: [Self.post("Free", "f1", "x")], as: Self.alice)
        #expect(try db.fetch(RecordID(recordName: "f1"), as: nil)["text"] == .string("x"))
        let bobs = try await db.modify(saving: [Self.post("Free", "f1", "y")], savePolicy: .allKeys, as: Self.bob)
        #expect(failure(bobs.saveResults[0].result)?.code == .permissionFailure)
    }

    @Test("roles are log events: assigning an unknown or built-in role is refused, and assignments survive a rebuild")
    func roleAssignments() async throws {
        let (world, _) = try await Self.world()
        let id = SchemaID(container: EngineWorld.containerID, environment: .development)
        await #expect(throws: CumulusError.self) { try await world.container.assignRoles(["Nope"], to: Self.bob, in: id) }
        await #expect(throws: CumulusError.self) { try await world.container.assignRoles(["_world"], to: Self.bob, in: id) }
        try world.checkLiveAndRebuilt {
            let assignments = try world.container.roleAssignments(in: id)
            #expect(assignments.map(\.user) == [Self.carol])
            #expect(assignments.first?.roles == ["Moderator"])
        }
        try await world.container.assignRoles([], to: Self.carol, in: id)
        #expect(try world.container.roleAssignments(in: id).isEmpty)
    }
}
