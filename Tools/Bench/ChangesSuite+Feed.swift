import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation

extension ChangesSuite {
    /// Reading every change of one zone from no token: `fetchZoneChanges` paged by
    /// its tokens, `pageSize` per page, to the end, against an LMDB cursor over the
    /// same zone's prefix of the `records` view decoding each value with
    /// `RecordCodec.decode` (what the changes have to return, without the feed).
    static func zoneFeed(_ sizes: Sizes, _ report: Report) async throws {
        report.section("changes: whole zone from no token, \(Report.grouped(Int64(sizes.records))) records")
        let cumulus = try await CumulusStore("changes-feed")
        defer { cumulus.close() }
        var rng = SeededRandom(seed: 7)
        var records: [Record] = []
        records.reserveCapacity(sizes.records)
        for index in 0..<sizes.records {
            var record = SampleData.todoItem(index, rng: &rng)
            record["list"] = nil
            records.append(record)
        }
        let load = try await measureAsync {
            var start = 0
            while start < records.count {
                let end = min(records.count, start + loadBatch)
                try CumulusStore.check(
                    try await cumulus.db.modify(
                        saving: Array(records[start..<end]), savePolicy: .allKeys, as: EngineSuite.actor))
                start = end
            }
        }
        let expected = Set(records.map(\.recordID.recordName))
        report.note(
            "loaded, untimed: \(Report.grouped(Int64(records.count))) records in \(Report.format(load)) s "
                + "(sequential Database.modify of \(loadBatch) records, .allKeys: \(records.count / loadBatch) commits)")
        report.note(
            "changes: fetchZoneChanges(zone, since: nil, then each page's token, resultsLimit: \(pageSize)) until !moreComing; "
                + "raw: one read transaction, txn.scan(records, prefix: zone key) + RecordCodec.decode per value; "
                + "warm page cache, best of \(sizes.rounds) alternating rounds")

        let database = SampleData.database
        let zoneKey = FeedKeys.zone(database, SampleData.zone)
        let container = cumulus.container
        let table = container.views.tables.records

        var changesBest = 0.0
        var rawBest = 0.0
        var mismatch: String?
        var pagesRead = 0
        // A warm-up of the raw side first, so both find the pages cached.
        _ = try rawScan(container, table, zoneKey)
        for _ in 0..<sizes.rounds {
            var names: [String] = []
            var deletions = 0
            var pages = 0
            let changesTime = try await measureAsync {
                var token: ChangeToken?
                while true {
                    let page = try await cumulus.db.fetchZoneChanges(
                        SampleData.zone, since: token, resultsLimit: pageSize, as: EngineSuite.actor)
                    for record in page.changed { names.append(record.recordID.recordName) }
                    deletions += page.deleted.count
                    token = page.token
                    pages += 1
                    if !page.moreComing { break }
                    if pages > sizes.records { throw BenchFailure("fetchZoneChanges did not end after \(pages) pages") }
                }
            }
            pagesRead = pages
            changesBest = max(changesBest, Double(names.count) / changesTime)
            if mismatch == nil { mismatch = feedDifference(names, deletions: deletions, expected) }

            var scanned = (count: 0, names: [String]())
            let rawTime = try measure { scanned = try rawScan(container, table, zoneKey) }
            rawBest = max(rawBest, Double(scanned.count) / rawTime)
            if mismatch == nil, Set(scanned.names) != expected || scanned.count != expected.count {
                mismatch = "raw scan found \(scanned.count) records, expected \(expected.count)"
            }
        }
        report.note("changes: \(pagesRead) pages per pass")
        report.compareWithoutTarget(
            "zone changes from no token, records/s", Figure(QuerySuite.checked(changesBest, mismatch, report), "records/s"),
            baseline: "raw scan of records view", Figure(rawBest, "records/s"))
    }

    /// Scans `zoneKey`'s records in one read transaction, decoding each.
    private static func rawScan(_ container: Container, _ table: LMDBTable, _ zoneKey: [UInt8]) throws
        -> (count: Int, names: [String])
    {
        var names: [String] = []
        try container.store.environment.read { txn in
            try txn.scan(table, prefix: zoneKey) { _, value in
                let record = try RecordCodec.decode(Array(value))
                names.append(record.recordID.recordName)
                return true
            }
        }
        return (names.count, names)
    }

    /// What is wrong with a pass through the feed, if anything: each record once,
    /// none missing, no deletions.
    private static func feedDifference(_ names: [String], deletions: Int, _ expected: Set<String>) -> String? {
        let unique = Set(names)
        var problems: [String] = []
        if names.count != unique.count { problems.append("\(names.count - unique.count) records returned twice") }
        let missing = expected.subtracting(unique)
        if !missing.isEmpty {
            problems.append("\(missing.count) records missing (e.g. \(missing.sorted().prefix(3).joined(separator: ", ")))")
        }
        let extra = unique.subtracting(expected)
        if !extra.isEmpty { problems.append("\(extra.count) unexpected records") }
        if deletions != 0 { problems.append("\(deletions) deletions reported, none made") }
        return problems.isEmpty ? nil : "fetchZoneChanges: " + problems.joined(separator: "; ")
    }
}
