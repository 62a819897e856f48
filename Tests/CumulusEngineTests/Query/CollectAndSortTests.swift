@testable import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Testing

/// The plan no index serves (every zone, or a distance or record-name sort first):
/// pages keep only what they return, and a page that would read too much is refused.
@Suite("Queries no index orders")
struct CollectAndSortTests {
    /// 3 zones × 70 records, `n` descending mixed across zones, so every page takes
    /// from several zones and the kept buffer is cut many times per page.
    static func world() async throws -> (EngineWorld, [String]) {
        let world = try EngineWorld()
        var expected: [(Int64, String)] = []
        for (z, zoneName) in ["A", "B", "C"].enumerated() {
            let zone = try await world.makeZone(zoneName)
            var records: [Record] = []
            for i in 0..<70 {
                let n = Int64((i * 37 + z * 11) % 97)
                let name = "\(zoneName)-\(i)"
                records.append(Record.make("Item", name, in: zone, ["n": .int64(n)]))
                expected.append((n, name))
            }
            try await world.save(records)
        }
        // Equal `n`s tie-break in position order (zone key, then name): checked as a
        // set per value below, the order of values exactly.
        return (world, expected.sorted { $0.0 > $1.0 }.map(\.1))
    }

    @Test("paging 7 at a time over every zone, sorted: every record once, in order")
    func pagesAcrossZones() async throws {
        let (world, expected) = try await Self.world()
        let query = Query(recordType: "Item", sort: [QuerySort(key: .field("n"), ascending: false)])
        var got: [Record] = []
        var result = try world.db.query(query, resultsLimit: 7, as: EngineWorld.user)
        got += result.records
        while let cursor = result.cursor {
            result = try world.db.query(continuing: cursor, resultsLimit: 7, as: EngineWorld.user)
            #expect(result.records.count <= 7)
            got += result.records
        }
        #expect(got.count == expected.count)
        #expect(Set(got.map(\.recordID.recordName)) == Set(expected))
        let values = got.map { record -> Int64 in
            if case .int64(let n) = record["n"] { return n }
            return -1
        }
        #expect(values == values.sorted(by: >))
    }

    @Test("a page that would read more records than the limit is refused with limitExceeded, naming what to do")
    func scanIsBounded() async throws {
        let (world, _) = try await Self.world()
        let query = Query(recordType: "Item", sort: [QuerySort(key: .field("n"))])
        let zones = try world.container.store.environment.read { txn in
            try world.container.views.zones(in: world.db.id, txn).map(\.zone.zoneID)
        }
        let (within, refusal) = try world.container.store.environment.read { txn -> (Int, (any Error)?) in
            var executor = QueryExecutor(views: world.container.views, txn: txn, database: world.db.id)
            executor.collectScanLimit = 210
            let within = try executor.run(query, zones: zones, after: nil, limit: 5).stored.count
            executor.collectScanLimit = 209
            do {
                _ = try executor.run(query, zones: zones, after: nil, limit: 5)
                return (within, nil)
            } catch {
                return (within, error)
            }
        }
        #expect(within == 5)
        let error = try #require(refusal as? CumulusError)
        #expect(error.code == .limitExceeded)
        #expect(error.message.contains("more than 209 records per page"))
    }
}
