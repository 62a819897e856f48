import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// Paging past records the caller may not read (issue 40): every plan passes over
/// them inside its walk, a page that has passed over `hiddenLimit` of them ends early
/// with a cursor after the last, and paging on returns exactly the caller's matches,
/// in order, once each.
@Suite("Query: paging past hidden records")
struct HiddenRecordPagingTests {
    static let alice = EngineWorld.user
    static let bob = EngineWorld.otherUser

    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Secret (
                "___recordID" REFERENCE QUERYABLE,
                rank INT64 QUERYABLE SORTABLE,
                band INT64 QUERYABLE SORTABLE,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
        """

    /// 60 records, one in five bob's; some lack `rank` (they page after the rest).
    static func world() async throws -> (EngineWorld, Database, bobs: Set<String>) {
        let world = try EngineWorld()
        try await world.container.importSchema(
            schema, into: SchemaID(container: EngineWorld.containerID, environment: .development))
        let db = world.container.publicDatabase(container: EngineWorld.containerID)
        var byOwner: [String: [Record]] = [:]
        for index in 0..<60 {
            var fields: [String: FieldValue] = ["band": .int64(Int64(index % 3))]
            if index % 7 != 0 { fields["rank"] = .int64(Int64((index * 37) % 60)) }
            let owner = index % 5 == 0 ? bob : alice
            byOwner[owner, default: []].append(Record.make("Secret", String(format: "r%02d", index), in: .default, fields))
        }
        for (owner, records) in byOwner {
            let result = try await db.modify(saving: records, as: owner)
            #expect(result.saveResults.allSatisfy { (try? $0.result.get()) != nil })
        }
        return (world, db, Set(byOwner[bob, default: []].map(\.recordID.recordName)))
    }

    static let sorts: [(String, [QuerySort])] = [
        ("name order", []),
        ("rank ascending", [QuerySort(key: .field("rank"))]),
        ("rank descending", [QuerySort(key: .field("rank"), ascending: false)]),
        ("band then rank", [QuerySort(key: .field("band")), QuerySort(key: .field("rank"), ascending: false)]),
    ]

    @Test("each plan pages to exactly the caller's records, whatever the hidden limit and page size")
    func pagesPastHidden() async throws {
        let (world, db, bobs) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        for (label, sort) in Self.sorts {
            for zone in [ZoneID.default, nil] {
                let query = Query(recordType: "Secret", sort: sort)
                let whole = try db.query(query, in: zone, resultsLimit: 400, as: Self.bob)
                #expect(whole.cursor == nil)
                let expected = whole.records.map(\.recordID.recordName)
                #expect(Set(expected) == bobs, "\(label)")
                for hiddenLimit in [1, 3, 1_000] {
                    for pageSize in [1, 4] {
                        var seen: [String] = []
                        var emptyPages = 0
                        var page = try db.query(
                            query, in: zone, resultsLimit: pageSize, hiddenLimit: hiddenLimit, as: Self.bob)
                        for _ in 0..<200 {
                            #expect(page.records.count <= pageSize)
                            if page.records.isEmpty { emptyPages += 1 }
                            seen += page.records.map(\.recordID.recordName)
                            guard let cursor = page.cursor else { break }
                            page = try db.query(
                                continuing: cursor, resultsLimit: pageSize, hiddenLimit: hiddenLimit, as: Self.bob)
                        }
                        #expect(page.cursor == nil, "\(label), zone \(String(describing: zone)), hidden \(hiddenLimit)")
                        #expect(seen == expected, "\(label), zone \(String(describing: zone)), hidden \(hiddenLimit), page \(pageSize)")
                        // A small hidden limit ends pages early (the one-key walks
                        // and name order can end on a hidden record alone).
                        if hiddenLimit == 1, pageSize == 1, zone != nil, sort.count < 2 {
                            #expect(emptyPages > 0, "\(label): no page ended early")
                        }
                    }
                }
            }
        }
    }

    @Test("the last visible record ends the paging: no cursor says hidden records follow")
    func noCursorForHiddenTail() async throws {
        let (world, db, _) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        // Bob's records are r00, r05, … r55; alice's r56–r59 come after his last.
        let all = try db.query(Query(recordType: "Secret"), in: .default, resultsLimit: 12, as: Self.bob)
        #expect(all.records.count == 12)
        #expect(all.records.last?.recordID.recordName == "r55")
        #expect(all.cursor == nil)
    }

    @Test("a cursor opens only for the user and database it was issued to")
    func cursorsAreBound() async throws {
        let (world, db, _) = try await Self.world()
        defer { withExtendedLifetime(world) {} }
        let first = try db.query(Query(recordType: "Secret"), in: .default, resultsLimit: 2, as: Self.alice)
        let cursor = try #require(first.cursor)
        #expect(throws: CumulusError.self) { try db.query(continuing: cursor, as: Self.bob) }
        #expect(throws: CumulusError.self) { try db.query(continuing: cursor, as: nil) }
        let alicesPrivate = world.container.privateDatabase(container: EngineWorld.containerID, user: Self.alice)
        #expect(throws: CumulusError.self) { try alicesPrivate.query(continuing: cursor, as: Self.alice) }
        #expect(try db.query(continuing: cursor, as: Self.alice).records.count > 0)
    }
}
