import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusEngine
@testable import CumulusLog
@testable import CumulusViews

/// Saves made ready on the caller's task (``PreparedSave``): the writer is handed
/// their content's derivation only when it describes the record saved, and the views
/// come out as a rebuild from the log makes them.
@Suite("Prepared saves")
struct PreparedSaveTests {
    static let development = SchemaID(container: EngineWorld.containerID, environment: .development)
    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Note (
                "___recordID" REFERENCE QUERYABLE,
                title STRING QUERYABLE SEARCHABLE,
                body STRING SEARCHABLE,
                score DOUBLE QUERYABLE SORTABLE,
                owner REFERENCE QUERYABLE
            );
        """

    /// Notes searched for `word`, by name.
    static func search(_ world: EngineWorld, _ word: String, in zone: ZoneID) throws -> [String] {
        let query = Query(
            recordType: "Note",
            filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string(word))])
        return try world.db.query(query, in: zone, resultsLimit: 400, as: EngineWorld.user).records
            .map(\.recordID.recordName).sorted()
    }

    @Test("views written with content derived on the callers' tasks equal a rebuild from the log: new records, replacements, partial and full updates, coerced values, parents, references, a schema grown in the same operation")
    func viewsEqualARebuild() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone("Notes")
        try await world.container.importSchema(Self.schema, into: Self.development)
        func note(_ name: String, _ title: String, _ score: Int64, extra: [String: FieldValue] = [:]) -> Record {
            // An integer for a DOUBLE field: prepared records are coerced, as planned ones are.
            Record.make("Note", name, in: zone, ["title": .string(title), "body": .string("body of \(name)"), "score": .int64(score)].merging(extra) { $1 })
        }
        var parented = note("n3", "gamma child", 3, extra: ["owner": ref("n1", in: zone, .deleteSelf)])
        parented.parent = Reference(recordID: id("n1", in: zone))
        try await world.save([note("n1", "alpha apple", 1), note("n2", "beta banana", 2), parented])
        // A full update (every field sent), a replacement, and a partial update whose
        // saved record keeps a field the client did not send.
        try await world.save([note("n1", "alpha avocado", 10)], policy: .allKeys)
        let replaced = Record.make("Note", "n2", in: zone, ["title": .string("beta blueberry"), "score": .double(20)])
        let partial = Record.make("Note", "n3", in: zone, ["title": .string("gamma grape")])
        let result = try await world.db.modify(
            ModifyOperation(saves: [RecordSave(replaced, mode: .forceReplace), RecordSave(partial, mode: .forceUpdate)]),
            as: EngineWorld.user)
        for item in result.saveResults { _ = try item.result.get() }
        // A new field grows the development schema inside the operation.
        try await world.save([note("n4", "delta date", 4, extra: ["mood": .string("cheerful")])])
        // An operation large enough to be prepared in slices, one of whose records
        // cannot be stored (a non-finite double): it is not prepared, and the planner
        // reports it as before while the rest are saved.
        var bulk = (0..<100).map { note("b\($0)", "bulk \($0)", Int64($0)) }
        bulk[57]["score"] = .double(.nan)
        let bulkResult = try await world.db.modify(
            ModifyOperation(saves: bulk.map { RecordSave($0, mode: .allKeys) }, atomic: false), as: EngineWorld.user)
        #expect(bulkResult.saveResults.filter { (try? $0.result.get()) != nil }.count == 99)
        #expect(failure(bulkResult.saveResults[57].result)?.code == .invalidArguments)
        try world.checkLiveAndRebuilt {
            #expect(try Self.search(world, "bulk", in: zone).count == 99)
            #expect(try Self.search(world, "avocado", in: zone) == ["n1"])
            #expect(try Self.search(world, "apple", in: zone) == [])
            #expect(try Self.search(world, "blueberry", in: zone) == ["n2"])
            #expect(try Self.search(world, "grape", in: zone) == ["n3"])
            #expect(try Self.search(world, "n3", in: zone) == ["n3"], "the partial update kept the body")
            #expect(try Self.search(world, "date", in: zone) == ["n4"])
            let stored = try world.fetch(id("n3", in: zone))
            #expect(stored.parent?.recordID == id("n1", in: zone))
            #expect(stored["score"] == .double(3))
        }
        // The deleteSelf reference was indexed from the prepared content: deleting the
        // owner takes the child.
        try await world.delete([id("n1", in: zone)])
        #expect(try world.noneExist([id("n1", in: zone), id("n3", in: zone)]))
        try world.checkLiveAndRebuilt {}
    }

    @Test("the planner hands the writer a save's content derivation only for a record saved with exactly that content, under the schema it was prepared under")
    func derivationHandedOnOnlyWhenItHolds() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone("Notes")
        try await world.container.importSchema(Self.schema, into: Self.development)
        try await world.save([Record.make("Note", "old", in: zone, ["title": .string("t"), "body": .string("b")])])

        /// Plans `saves` with preparations made now; returns, per event, whether it carries one.
        func plan(_ saves: [RecordSave], prepared: [PreparedSave?]? = nil) async throws -> [Bool] {
            let views = world.container.views
            var planner = ModifyPlanner(
                views: views, database: world.db.id, actor: EngineWorld.user, saves: saves, deletes: [], atomic: false,
                saveErrors: [:], deleteErrors: [:], clientChangeTokenData: nil, requestID: "plan-test")
            if let prepared {
                planner.prepared = prepared
            } else {
                planner.prepared = await PreparedSave.prepare(
                    saves, skipping: [:], in: world.db.id, views: views, environment: world.container.store.environment)
            }
            let (request, result) = try world.container.store.environment.write { txn in
                try planner.plan(LogWriter.PlanContext(transaction: txn, sequence: 1_000, now: .now()))
            }
            let events = try #require(request, "\(result.saveResults)").events
            guard let derivations = request?.workAhead as? CommitDerivations else { return events.map { _ in false } }
            return events.indices.map { index in
                if case .content = derivations.derivation(at: index) { true } else { false }
            }
        }

        let fresh = RecordSave(Record.make("Note", "new", in: zone, ["title": .string("fresh")]), mode: .allKeys)
        let partial = RecordSave(Record.make("Note", "old", in: zone, ["title": .string("only the title")]), mode: .forceUpdate)
        #expect(try await plan([fresh]) == [true])
        #expect(try await plan([partial]) == [false], "the saved record keeps a body the client did not send")
        #expect(try await plan([fresh, partial]) == [true, false])

        // Prepared before the schema changed: the planner coerces and derives afresh.
        let stale = await PreparedSave.prepare(
            [fresh], skipping: [:], in: world.db.id, views: world.container.views,
            environment: world.container.store.environment)
        try await world.container.importSchema(
            Self.schema.replacingOccurrences(of: "body STRING SEARCHABLE", with: "body STRING"), into: Self.development)
        #expect(try await plan([fresh], prepared: stale) == [false])
        #expect(try await plan([fresh]) == [true])

        // A field the schema does not know grows it: the derivation goes with the save
        // (its events follow the schema's), and the views, whose schema by then has
        // another stamp, derive the record again when they apply it.
        let growing = RecordSave(Record.make("Note", "grown", in: zone, ["colour": .string("red")]), mode: .allKeys)
        #expect(try await plan([growing]) == [false, true])
    }
}
