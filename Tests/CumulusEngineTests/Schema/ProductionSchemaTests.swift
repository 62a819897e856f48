import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// Production: the schema is fixed by a deploy, saves are checked against it, and a
/// query may use only the indexes it declares (issue #13; `Docs/SCHEMA.md`).
@Suite("Schema: production")
struct ProductionSchemaTests {
    static let schemaText = """
        DEFINE SCHEMA
            RECORD TYPE Note (
                "___recordID" REFERENCE QUERYABLE,
                "___createTime" TIMESTAMP SORTABLE,
                title STRING QUERYABLE SORTABLE SEARCHABLE,
                body STRING,
                rank INT64 QUERYABLE,
                score DOUBLE SORTABLE,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world"
            );
        """

    /// A container whose production schema is `schemaText` (imported to development, deployed).
    static func deployed(_ world: EngineWorld) async throws -> Database {
        let container = EngineWorld.containerID
        try await world.container.importSchema(
            schemaText, into: SchemaID(container: container, environment: .development))
        try await world.container.deploySchema(container: container)
        return world.container.privateDatabase(container: container, user: EngineWorld.user, environment: .production)
    }

    static func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
        Record.make("Note", name, in: .default, fields)
    }

    @Test("a save of an undeclared type, an undeclared field or a value of another type is refused with its error")
    func savesAreChecked() async throws {
        let world = try EngineWorld()
        let db = try await Self.deployed(world)
        let result = try await db.modify(
            saving: [
                Record.make("Unknown", "u1", in: .default, ["title": .string("x")]),
                Self.note("n1", ["title": .string("ok"), "color": .string("red")]),
                Self.note("n2", ["rank": .string("high")]),
                Self.note("n3", ["title": .string("fine"), "rank": .int64(2)]),
            ],
            savePolicy: .allKeys, atomic: false, as: EngineWorld.user)
        let errors = result.saveResults.map { failure($0.result) }
        #expect(errors[0]?.code == .invalidArguments)
        #expect(errors[0]?.message.contains("Cannot create new type Unknown in production schema") == true)
        #expect(errors[1]?.code == .invalidArguments)
        #expect(errors[1]?.message.contains("field 'color'") == true)
        #expect(errors[1]?.field == "color")
        #expect(errors[2]?.code == .invalidArguments)
        #expect(errors[2]?.message == "invalid attempt to set value type STRING for field 'rank' for type 'Note', defined to be: INT64")
        #expect(errors[3] == nil)
        // Production never grows: no schema event was logged by the saves.
        let events = try world.allEvents()
        #expect(events.filter { if case .schemaExtended = $0 { true } else { false } }.isEmpty)
    }

    @Test("an integer sent for a DOUBLE or TIMESTAMP field is stored as the declared type")
    func integersAreCoerced() async throws {
        let world = try EngineWorld()
        let db = try await Self.deployed(world)
        _ = try await db.modify(saving: [Self.note("n1", ["score": .int64(3)])], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(try db.fetch(RecordID(recordName: "n1"), as: EngineWorld.user)["score"] == .double(3))
    }

    @Test("a filter on a field that is not QUERYABLE, a range or sort on one that is not SORTABLE, are refused naming it")
    func queriesNeedDeclaredIndexes() async throws {
        let world = try EngineWorld()
        let db = try await Self.deployed(world)
        _ = try await db.modify(
            saving: [Self.note("n1", ["title": .string("Milk"), "body": .string("buy milk"), "rank": .int64(1)])],
            savePolicy: .allKeys, as: EngineWorld.user)
        func refusal(_ query: Query) -> CumulusError? {
            do {
                _ = try db.query(query, in: .default, as: EngineWorld.user)
                return nil
            } catch let error as CumulusError {
                return error
            } catch {
                return CumulusError(.internalError, "\(error)")
            }
        }
        let body = refusal(Query(recordType: "Note", filters: [QueryFilter(key: .field("body"), comparator: .equals, value: .string("x"))]))
        #expect(body?.code == .invalidArguments)
        #expect(body?.message == "Field 'body' is not marked queryable")
        let sort = refusal(Query(recordType: "Note", sort: [QuerySort(key: .field("rank"))]))
        #expect(sort?.message == "Field 'rank' is not marked sortable")
        let range = refusal(Query(recordType: "Note", filters: [QueryFilter(key: .field("rank"), comparator: .greaterThan, value: .int64(0))]))
        #expect(range?.message == "Field 'rank' is not marked sortable")
        let created = refusal(Query(recordType: "Note", filters: [QueryFilter(key: .creationDate, comparator: .equals, value: .timestamp(Timestamp(millisecondsSince1970: 1)))]))
        #expect(created?.message.contains("is not marked queryable") == true)
        let unknown = refusal(Query(recordType: "Ghost"))
        #expect(unknown?.code == .invalidArguments)

        // What the schema declares works.
        let byTitle = try db.query(
            Query(recordType: "Note", filters: [QueryFilter(key: .field("title"), comparator: .equals, value: .string("milk"))]),
            in: .default, as: EngineWorld.user)
        #expect(byTitle.records.map(\.recordID.recordName) == ["n1"])
        let all = try db.query(Query(recordType: "Note", sort: [QuerySort(key: .creationDate)]), in: .default, as: EngineWorld.user)
        #expect(all.records.count == 1)
        let search = try db.query(
            Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("milk"))]),
            in: .default, as: EngineWorld.user)
        #expect(search.records.map(\.recordID.recordName) == ["n1"], "title is searchable")
        let bodyWords = try db.query(
            Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("buy"))]),
            in: .default, as: EngineWorld.user)
        #expect(bodyWords.records.isEmpty, "body is not searchable, so its words are not indexed")
    }

    @Test("a token search on a type with no SEARCHABLE field, and a query with no filter without ___recordID QUERYABLE, are refused")
    func searchAndRecordNameNeedIndexes() async throws {
        let world = try EngineWorld()
        let container = EngineWorld.containerID
        try await world.container.importSchema(
            "DEFINE SCHEMA RECORD TYPE Plain ( name STRING QUERYABLE );",
            into: SchemaID(container: container, environment: .production))
        let db = world.container.privateDatabase(container: container, user: EngineWorld.user, environment: .production)
        #expect(throws: CumulusError(.invalidArguments, "no field of record type 'Plain' is marked searchable; `self CONTAINS` needs one")) {
            try db.query(
                Query(recordType: "Plain", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("x"))]),
                in: .default, as: EngineWorld.user)
        }
        #expect(throws: CumulusError(.invalidArguments, "Field 'recordName' is not marked queryable", field: "recordName")) {
            try db.query(Query(recordType: "Plain"), in: .default, as: EngineWorld.user)
        }
    }

    @Test("deploy refuses a change that is not additive, naming the type or field, and changes nothing")
    func deployIsAdditive() async throws {
        let world = try EngineWorld()
        _ = try await Self.deployed(world)
        let development = SchemaID(container: EngineWorld.containerID, environment: .development)
        let production = SchemaID(container: EngineWorld.containerID, environment: .production)
        let before = try world.container.exportSchema(production)
        let removedField = Self.schemaText.replacingOccurrences(of: "        body STRING,\n", with: "")
        let retyped = Self.schemaText.replacingOccurrences(of: "rank INT64", with: "rank STRING")
        let removedType = "DEFINE SCHEMA RECORD TYPE Other ( x STRING );"
        for (text, named) in [(removedField, "field 'Note.body' would be removed"),
                              (retyped, "field 'Note.rank' would change type from INT64 to STRING"),
                              (removedType, "record type 'Note' would be removed")] {
            // Development refuses the import itself (it must stay additive to production)...
            await #expect { try await world.container.importSchema(text, into: development) } throws: { error in
                (error as? CumulusError)?.message.contains(named) == true
            }
            // ... and production refuses it directly.
            await #expect { try await world.container.importSchema(text, into: production) } throws: { error in
                (error as? CumulusError)?.code == .invalidArguments && (error as? CumulusError)?.message.contains(named) == true
            }
        }
        #expect(try world.container.exportSchema(production) == before)
        // Adding is fine: a new field and a new index.
        let added = Self.schemaText.replacingOccurrences(of: "body STRING,", with: "body STRING QUERYABLE,\n        color STRING,")
        try await world.container.importSchema(added, into: development)
        let deployed = try await world.container.deploySchema(container: EngineWorld.containerID)
        #expect(deployed.recordType("Note")?.field("color") != nil)
    }
}
