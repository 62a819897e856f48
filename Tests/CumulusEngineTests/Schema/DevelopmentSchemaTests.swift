import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// Development: the schema grows just in time, one logged event per new type and
/// per new field; an imported schema can turn indexes off and on, and index changes
/// are built inside the apply of their event, so live views, a rebuild and a
/// follower agree (issue #13).
@Suite("Schema: development")
struct DevelopmentSchemaTests {
    static var development: SchemaID { SchemaID(container: EngineWorld.containerID, environment: .development) }

    static func schemaEvents(_ world: EngineWorld) throws -> [(type: String, fields: [String])] {
        try world.allEvents().compactMap { event in
            guard case .schemaExtended(_, let type, let fields) = event else { return nil }
            return (type, fields.map(\.name))
        }
    }

    @Test("saving a new type or field adds it to the schema: one event per change, none for saves that add nothing")
    func growsJustInTime() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Note", "n1", in: zone, ["title": .string("a"), "rank": .int64(1)]),
            Record.make("Note", "n2", in: zone, ["title": .string("b")]),
        ])
        var events = try Self.schemaEvents(world)
        #expect(events.count == 3, "the type, then title and rank: \(events)")
        #expect(events[0].type == "Note")
        #expect(events[0].fields.contains("___createTime"))
        #expect(Set(events[1...].map(\.fields)) == [["rank"], ["title"]])
        // The same fields again add nothing; a new field adds one event.
        try await world.save([Record.make("Note", "n3", in: zone, ["title": .string("c"), "rank": .int64(3)])])
        #expect(try Self.schemaEvents(world).count == 3)
        try await world.save([Record.make("Note", "n4", in: zone, ["tags": .list([.string("x")])])])
        events = try Self.schemaEvents(world)
        #expect(events.count == 4)
        #expect(events[3].fields == ["tags"])
        let schema = try world.container.schema(Self.development)
        let note = try #require(schema.recordType("Note"))
        #expect(note.field("title")?.type == SchemaFieldType(.string))
        #expect(note.field("title")?.indexes == .all)
        #expect(note.field("rank")?.type == SchemaFieldType(.int64))
        #expect(note.field("tags")?.type == SchemaFieldType(.string, list: true))
        // The export shows it, and it re-imports to the same bytes.
        let text = try world.container.exportSchema(Self.development)
        #expect(text.contains("title STRING QUERYABLE SORTABLE SEARCHABLE"))
        #expect(SchemaPrinter.print(try SchemaParser.parse(text)) == text)
        try world.checkLiveAndRebuilt {
            let rebuilt = try world.container.schema(Self.development)
            #expect(rebuilt == schema)
        }
    }

    @Test("a failed save adds nothing to the schema")
    func failedSavesDoNotGrow() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let result = try await world.db.modify(
            saving: [
                Record.make("Note", "n1", in: zone, ["title": .string("a")]),
                Record.make("Note", "n2", in: zone, ["owner": ref("missing", in: zone, .validate)]),
            ],
            savePolicy: .allKeys, atomic: true, as: EngineWorld.user)
        #expect(failure(result.saveResults[1].result)?.code == .referenceViolation)
        #expect(try Self.schemaEvents(world).isEmpty)
        #expect(try world.container.schema(Self.development) == .empty)
    }

    @Test("an imported development schema turns indexes off: the entries go, and queries on the field are refused")
    func importTurnsIndexesOff() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save((0..<20).map {
            Record.make("Note", "n\($0)", in: zone, ["title": .string("t\($0 % 3)"), "body": .string("word\($0) common")])
        })
        let indexed = try fieldEntries(world)
        try await world.container.importSchema(
            """
            DEFINE SCHEMA
                RECORD TYPE Note ( "___recordID" REFERENCE QUERYABLE, title STRING QUERYABLE, body STRING );
            """, into: Self.development)
        #expect(try fieldEntries(world) < indexed)
        #expect(try tokenEntries(world) == 0, "no field is searchable any more")
        #expect(throws: CumulusError.self) {
            try world.db.query(Query(recordType: "Note", sort: [QuerySort(key: .field("title"))]), in: zone, as: EngineWorld.user)
        }
        try world.checkLiveAndRebuilt {
            let found = try world.db.query(
                Query(recordType: "Note", filters: [QueryFilter(key: .field("title"), comparator: .equals, value: .string("T1"))]),
                in: zone, resultsLimit: 100, as: EngineWorld.user)
            #expect(found.records.count == 7)
        }
    }

    @Test("an index added to a populated type answers queries at once, the same after a rebuild")
    func addedIndexIsBuilt() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.container.importSchema(
            "DEFINE SCHEMA RECORD TYPE Item ( \"___recordID\" REFERENCE QUERYABLE, size INT64, label STRING );",
            into: Self.development)
        try await world.save((0..<50).map { Record.make("Item", "i\($0)", in: zone, ["size": .int64(Int64($0)), "label": .string("item \($0)")]) })
        let bySize = Query(
            recordType: "Item", filters: [QueryFilter(key: .field("size"), comparator: .greaterThanOrEquals, value: .int64(45))],
            sort: [QuerySort(key: .field("size"), ascending: false)])
        #expect(throws: CumulusError(.invalidArguments, "Field 'size' is not marked sortable", field: "size")) {
            try world.db.query(bySize, in: zone, as: EngineWorld.user)
        }
        #expect(try fieldEntries(world) == 0)
        try await world.container.importSchema(
            "DEFINE SCHEMA RECORD TYPE Item ( \"___recordID\" REFERENCE QUERYABLE, size INT64 QUERYABLE SORTABLE, label STRING SEARCHABLE );",
            into: Self.development)
        try world.checkLiveAndRebuilt {
            let found = try world.db.query(bySize, in: zone, as: EngineWorld.user)
            #expect(found.records.map(\.recordID.recordName) == ["i49", "i48", "i47", "i46", "i45"])
            let words = try world.db.query(
                Query(recordType: "Item", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("7"))]),
                in: zone, as: EngineWorld.user)
            #expect(words.records.map(\.recordID.recordName) == ["i7"])
        }
        #expect(try fieldEntries(world) == 50)
    }

    @Test("reset sets development back to production's schema")
    func resetRestoresProduction() async throws {
        let world = try EngineWorld()
        try await world.container.importSchema("DEFINE SCHEMA RECORD TYPE A ( x STRING );", into: Self.development)
        try await world.container.deploySchema(container: EngineWorld.containerID)
        try await world.container.importSchema("DEFINE SCHEMA RECORD TYPE A ( x STRING, y INT64 ); RECORD TYPE B ( z STRING );", into: Self.development)
        #expect(try world.container.schema(Self.development).recordTypes.count == 2)
        try await world.container.resetSchema(container: EngineWorld.containerID)
        let production = try world.container.schema(SchemaID(container: EngineWorld.containerID, environment: .production))
        #expect(try world.container.schema(Self.development) == production)
        let reasons = try world.allEvents().compactMap { event -> SchemaChangeReason? in
            if case .schemaChanged(_, _, let reason) = event { return reason }
            return nil
        }
        #expect(reasons == [.imported, .deployed, .imported, .reset])
    }

    @Test("a log written before schemas existed indexes every field in development, as before")
    func undeclaredTypesAreFullyIndexed() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        // Commits without schema events, as an older version wrote them.
        let record = Record.make("Old", "o1", in: zone, ["title": .string("hello world")])
        var stored = record
        stored.creationDate = Timestamp(millisecondsSince1970: 1)
        stored.modificationDate = Timestamp(millisecondsSince1970: 1)
        stored.creatorUserRecordID = RecordID(recordName: EngineWorld.user)
        stored.lastModifiedUserRecordID = RecordID(recordName: EngineWorld.user)
        stored.recordChangeTag = "x"
        let database = world.db.id
        let event = Event.recordSaved(database: database, record: stored, changedKeys: ["title"])
        _ = try await world.container.writer.submit { _ in
            (CommitRequest(actor: EngineWorld.user, requestID: "old", events: [event]), ())
        }
        let found = try world.db.query(
            Query(recordType: "Old", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("hello"))]),
            in: zone, as: EngineWorld.user)
        #expect(found.records.map(\.recordID.recordName) == ["o1"])
        let sorted = try world.db.query(Query(recordType: "Old", sort: [QuerySort(key: .field("title"))]), in: zone, as: EngineWorld.user)
        #expect(sorted.records.count == 1)
    }

    func fieldEntries(_ world: EngineWorld) throws -> Int {
        try world.container.store.environment.read { try $0.count(world.container.views.tables.fieldIndex) }
    }

    func tokenEntries(_ world: EngineWorld) throws -> Int {
        try world.container.store.environment.read { txn in
            var postings = 0
            try txn.scanLogicalKeys(world.container.views.tables.tokenIndex) { _ in
                postings += 1
                return true
            }
            return postings
        }
    }
}
