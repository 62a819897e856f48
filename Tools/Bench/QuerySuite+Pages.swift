import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

extension QuerySuite {
    /// A query sorted by `dueDate` ascending, `pageSize` per page: the first page, and
    /// a deep page fetched from its cursor (reached by following cursors, untimed).
    /// SQLite pages by key (`(dueDate, name) > (?, ?)`) on an index on (dueDate, name);
    /// its `OFFSET` form is printed for information. Twice: over all items, and with
    /// `priority >= 2` (about half of them).
    static func sortedPages(_ data: QueryData, _ cumulus: CumulusStore, _ sqlite: SQLiteItems, _ sizes: Sizes, _ report: Report)
        throws
    {
        report.section("query: sorted by dueDate ascending, \(pageSize) per page, full records")
        report.note(
            "Cumulus: Database.query(…, sort: dueDate, in: zone, resultsLimit: \(pageSize)) and query(continuing: cursor); "
                + "SQLite: the same rows ORDER BY dueDate, name (Cumulus breaks ties by record name), blobs copied out; "
                + "each figure repeated for ≥ \(Report.format(sizes.minSeconds)) s, best of \(sizes.rounds) alternating rounds")
        try sortedVariant("all", filter: nil, sqlFilter: nil, deepPage: sizes.deepPage, data, cumulus, sqlite, sizes, report)
        try sortedVariant(
            "priority>=2",
            filter: QueryFilter(key: .field("priority"), comparator: .greaterThanOrEquals, value: .int64(2)),
            sqlFilter: "priority >= 2", deepPage: sizes.filteredDeepPage, data, cumulus, sqlite, sizes, report)
        try twoKeyPages(sizes.deepPage, cumulus, sqlite, sizes, report)
    }

    /// Two sort keys, `dueDate` then `priority` descending: Cumulus walks the dueDate
    /// index group by group (records sharing a due date sorted by priority in memory);
    /// SQLite uses its (dueDate, name) index and sorts each run of equal dates. No
    /// target: the figure shows what a page with two keys costs beside one.
    private static func twoKeyPages(_ deepPage: Int, _ cumulus: CumulusStore, _ sqlite: SQLiteItems, _ sizes: Sizes, _ report: Report)
        throws
    {
        let query = Query(
            recordType: "TodoItem", sort: [QuerySort(key: .field("dueDate")), QuerySort(key: .field("priority"), ascending: false)])
        let order = "ORDER BY dueDate, priority DESC, name LIMIT \(pageSize)"
        let firstSQL = "SELECT name, data FROM items \(order)"
        let deepSQL = "SELECT name, data FROM items \(order) OFFSET \((deepPage - 1) * pageSize)"
        report.note(
            "two keys (dueDate, then priority descending; ties by name): first page = \(firstSQL) (plan: \(try sqlite.plan(firstSQL))); "
                + "page \(deepPage): Cumulus from its cursor, SQLite by OFFSET")
        let first = try sqlite.db.prepare(firstSQL)
        let deep = try sqlite.db.prepare(deepSQL)
        let sqliteFirst = try rowNames(first)
        let sqliteDeep = try rowNames(deep)

        var mismatch: String?
        let firstPage = try cumulus.db.query(query, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor)
        if let difference = difference(names(firstPage.records), sqliteFirst) { mismatch = "two keys, first page: \(difference)" }
        var cursor = firstPage.cursor
        var reached = 1
        while reached < deepPage - 1, let next = cursor {
            cursor = try cumulus.db.query(continuing: next, resultsLimit: pageSize, as: EngineSuite.actor).cursor
            reached += 1
        }
        guard let deepCursor = cursor else { throw BenchFailure("two keys: Cumulus's cursors ended after page \(reached)") }
        let deepPageRecords = try cumulus.db.query(continuing: deepCursor, resultsLimit: pageSize, as: EngineSuite.actor)
        if mismatch == nil, let difference = difference(names(deepPageRecords.records), sqliteDeep) {
            mismatch = "two keys, page \(deepPage): \(difference)"
        }
        var firstRate = 0.0, deepRate = 0.0, sqliteFirstRate = 0.0, sqliteDeepRate = 0.0
        for _ in 0..<sizes.rounds {
            sqliteFirstRate = max(sqliteFirstRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(first) })
            firstRate = max(firstRate, try callRate(minSeconds: sizes.minSeconds) {
                _ = try cumulus.db.query(query, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor)
            })
            sqliteDeepRate = max(sqliteDeepRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(deep) })
            deepRate = max(deepRate, try callRate(minSeconds: sizes.minSeconds) {
                _ = try cumulus.db.query(continuing: deepCursor, resultsLimit: pageSize, as: EngineSuite.actor)
            })
        }
        report.compare(
            "pages/s, two keys, first page", Figure(checked(firstRate, mismatch, report), "pages/s"),
            baseline: "SQLite ORDER BY dueDate, priority DESC", Figure(sqliteFirstRate, "pages/s"))
        report.compare(
            "pages/s, two keys, page \(deepPage) by cursor", Figure(mismatch == nil ? deepRate : 0, "pages/s"),
            baseline: "SQLite … OFFSET \((deepPage - 1) * pageSize)", Figure(sqliteDeepRate, "pages/s"))
    }

    private static func sortedVariant(
        _ label: String, filter: QueryFilter?, sqlFilter: String?, deepPage: Int, _ data: QueryData, _ cumulus: CumulusStore,
        _ sqlite: SQLiteItems, _ sizes: Sizes, _ report: Report
    ) throws {
        let query = Query(recordType: "TodoItem", filters: filter.map { [$0] } ?? [], sort: [QuerySort(key: .field("dueDate"))])
        let whereClause = sqlFilter.map { "WHERE \($0) " } ?? ""
        let order = "ORDER BY dueDate, name LIMIT \(pageSize)"
        let skipped = (deepPage - 1) * pageSize
        let firstSQL = "SELECT name, data FROM items \(whereClause)\(order)"
        let keysetSQL = "SELECT name, data FROM items WHERE \(sqlFilter.map { "\($0) AND " } ?? "")"
            + "(dueDate, name) > (?1, ?2) \(order)"
        let offsetSQL = "SELECT name, data FROM items \(whereClause)\(order) OFFSET \(skipped)"
        let matching = try sqlite.db.scalar("SELECT count(*) FROM items \(whereClause)")
        report.note(
            "\(label) (\(Report.grouped(matching)) matching items; Cumulus filter: \(filter.map { "\($0.key) \($0.comparator.rawValue) 2" } ?? "none")): "
                + "first page = \(firstSQL) (plan: \(try sqlite.plan(firstSQL))); page \(deepPage) = \(keysetSQL) "
                + "(plan: \(try sqlite.plan(keysetSQL)))")
        guard matching > skipped else { throw BenchFailure("\(label): \(matching) matches, no page \(deepPage)") }

        // SQLite's pages, and the key before the deep page (untimed).
        let first = try sqlite.db.prepare(firstSQL)
        let keyset = try sqlite.db.prepare(keysetSQL)
        let offset = try sqlite.db.prepare(offsetSQL)
        let before = try sqlite.db.prepare(
            "SELECT dueDate, name FROM items \(whereClause)ORDER BY dueDate, name LIMIT 1 OFFSET \(skipped - 1)")
        guard try before.step(), let lastName = before.text(1) else { throw BenchFailure("\(label): no row \(skipped)") }
        let lastDue = before.int64(0)
        try before.reset()
        try keyset.bind(1, int: lastDue)
        try keyset.bind(2, text: lastName)
        let sqliteFirst = try rowNames(first)
        let sqliteDeep = try rowNames(keyset)
        let sqliteOffset = try rowNames(offset)
        guard sqliteDeep == sqliteOffset, sqliteDeep.count == min(pageSize, Int(matching) - skipped) else {
            throw BenchFailure("\(label): SQLite's keyset and OFFSET pages differ (\(sqliteDeep.count) / \(sqliteOffset.count) rows)")
        }

        // Cumulus: first page, then cursors to the deep page (timed only for information).
        var mismatch: String?
        let firstPage = try cumulus.db.query(query, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor)
        if let difference = difference(names(firstPage.records), sqliteFirst) {
            mismatch = "\(label), first page: \(difference)"
        }
        var cursor = firstPage.cursor
        var reached = 1
        let walk = try measure {
            while reached < deepPage - 1, let next = cursor {
                cursor = try cumulus.db.query(continuing: next, resultsLimit: pageSize, as: EngineSuite.actor).cursor
                reached += 1
            }
        }
        var deepRate = 0.0
        var firstRate = 0.0
        var sqliteFirstRate = 0.0
        var sqliteDeepRate = 0.0
        var sqliteOffsetRate = 0.0
        for _ in 0..<sizes.rounds {
            sqliteFirstRate = max(sqliteFirstRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(first) })
            firstRate = max(firstRate, try callRate(minSeconds: sizes.minSeconds) {
                _ = try cumulus.db.query(query, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor)
            })
        }
        if let deepCursor = cursor, reached == deepPage - 1 {
            let deep = try cumulus.db.query(continuing: deepCursor, resultsLimit: pageSize, as: EngineSuite.actor)
            if mismatch == nil, let difference = difference(names(deep.records), sqliteDeep) {
                mismatch = "\(label), page \(deepPage) from its cursor: \(difference)"
            }
            for _ in 0..<sizes.rounds {
                sqliteDeepRate = max(sqliteDeepRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(keyset) })
                deepRate = max(deepRate, try callRate(minSeconds: sizes.minSeconds) {
                    _ = try cumulus.db.query(continuing: deepCursor, resultsLimit: pageSize, as: EngineSuite.actor)
                })
                sqliteOffsetRate = max(sqliteOffsetRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(offset) })
            }
        } else {
            mismatch = mismatch ?? "\(label): Cumulus's cursors ended after page \(reached), SQLite has \(matching) matches "
                + "(page \(deepPage) exists)"
            for _ in 0..<sizes.rounds {
                sqliteDeepRate = max(sqliteDeepRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(keyset) })
                sqliteOffsetRate = max(sqliteOffsetRate, try callRate(minSeconds: sizes.minSeconds) { _ = try drain(offset) })
            }
        }

        report.compare(
            "pages/s, \(label), first page", Figure(checked(firstRate, mismatch, report), "pages/s"),
            baseline: "SQLite ORDER BY … LIMIT \(pageSize)", Figure(sqliteFirstRate, "pages/s"))
        report.compare(
            "pages/s, \(label), page \(deepPage) by cursor", Figure(mismatch == nil ? deepRate : 0, "pages/s"),
            baseline: "SQLite keyset (dueDate,name)>", Figure(sqliteDeepRate, "pages/s"))
        report.compare(
            "  (same, beside SQLite OFFSET)", Figure(deepRate, "pages/s"),
            baseline: "SQLite LIMIT \(pageSize) OFFSET \(skipped)", Figure(sqliteOffsetRate, "pages/s"))
        report.detail(
            "  Cumulus: following cursors",
            "pages 2–\(reached) in \(Report.format(walk)) s, \(Report.format(walk * 1000 / Double(max(1, reached - 1)))) ms per page")
    }
}
