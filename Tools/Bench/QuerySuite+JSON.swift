import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

/// The same pages as the other query figures, but what each side produces is the
/// answer a client gets: a page's CloudKit JSON bytes. Cumulus writes them from the
/// stored records inside the read (`Database.query(…, body)` and `fetch(_:as:_:)` with
/// ``RecordJSONWriter``, as the server does); SQLite holds every field and system field
/// as a column, with the same indexes and `PRAGMA mmap_size` covering the file, and
/// builds the same JSON with `json_object` per row inside `json_group_array`. Both
/// answers are parsed and compared before anything is timed.
extension QuerySuite {
    /// SQLite with one column per field: what a competent user of it would store.
    final class SQLiteColumns {
        let directory: ScratchDirectory
        let db: SQLiteDatabase
        /// Whether this SQLite has FTS5 (Debian's does): the token search's baseline.
        let hasFTS5: Bool

        /// The JSON of one row, member for member what Cumulus writes for the record.
        static func rowJSON(owner: String, zone: String) -> String {
            let zoneID = "json_object('ownerRecordName', '\(owner)', 'zoneName', '\(zone)')"
            return """
                json_object(
                  'created', json_object('deviceID', 'Cumulus', 'timestamp', created, 'userRecordName', creator),
                  'deleted', json('false'),
                  'fields', json_object(
                    'done', json_object('type', 'INT64', 'value', done),
                    'dueDate', json_object('type', 'TIMESTAMP', 'value', dueDate),
                    'list', json_object('type', 'REFERENCE', 'value',
                      json_object('action', 'DELETE_SELF', 'recordName', list, 'zoneID', \(zoneID))),
                    'notes', json_object('type', 'STRING', 'value', notes),
                    'priority', json_object('type', 'INT64', 'value', priority),
                    'tags', json_object('type', 'STRING_LIST', 'value', json(tags)),
                    'title', json_object('type', 'STRING', 'value', title)),
                  'modified', json_object('deviceID', 'Cumulus', 'timestamp', modified, 'userRecordName', modifier),
                  'recordChangeTag', tag, 'recordName', name, 'recordType', 'TodoItem',
                  'zoneID', \(zoneID))
                """
        }

        init(_ records: [Record]) throws {
            directory = ScratchDirectory("sqlite-json")
            try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
            db = try SQLiteDatabase(path: directory.path + "/items.sqlite")
            try db.exec("PRAGMA journal_mode=WAL")
            try db.exec("PRAGMA mmap_size=\(1 << 30)")
            try db.exec(
                """
                CREATE TABLE items(
                    name TEXT PRIMARY KEY, list TEXT NOT NULL, dueDate INTEGER, priority INTEGER, done INTEGER,
                    title TEXT, notes TEXT, tags TEXT NOT NULL, created INTEGER, creator TEXT, modified INTEGER,
                    modifier TEXT, tag TEXT) WITHOUT ROWID;
                CREATE INDEX items_list ON items(list, name);
                CREATE INDEX items_due ON items(dueDate, name);
                """)
            // Token search: FTS5 over the texts, each row naming its item (a WITHOUT
            // ROWID table has no rowid to share), joined back by the primary key.
            hasFTS5 = (try? db.exec("CREATE VIRTUAL TABLE items_fts USING fts5(name UNINDEXED, title, notes, tags)")) != nil
            let insertText = hasFTS5 ? try db.prepare("INSERT INTO items_fts(name, title, notes, tags) VALUES (?1, ?2, ?3, ?4)") : nil
            let insert = try db.prepare("INSERT INTO items VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)")
            try db.exec("BEGIN")
            for record in records {
                func text(_ key: String) -> String {
                    if case .string(let text)? = record[key] { return text }
                    return ""
                }
                func int(_ key: String) -> Int64 {
                    switch record[key] {
                    case .int64(let number)?: number
                    case .timestamp(let time)?: time.millisecondsSince1970
                    default: 0
                    }
                }
                guard case .reference(let list)? = record["list"], case .list(let tags)? = record["tags"] else {
                    throw BenchFailure("item \(record.recordID.recordName) lacks its list or tags")
                }
                let tagsJSON = JSONValue.array(tags.map(\.wireValue))
                try insert.bind(1, text: record.recordID.recordName)
                try insert.bind(2, text: list.recordID.recordName)
                try insert.bind(3, int: int("dueDate"))
                try insert.bind(4, int: int("priority"))
                try insert.bind(5, int: int("done"))
                try insert.bind(6, text: text("title"))
                try insert.bind(7, text: text("notes"))
                try insert.bind(8, text: String(decoding: try tagsJSON.serialized(), as: UTF8.self))
                try insert.bind(9, int: record.creationDate?.millisecondsSince1970 ?? 0)
                try insert.bind(10, text: record.creatorUserRecordID?.recordName ?? "")
                try insert.bind(11, int: record.modificationDate?.millisecondsSince1970 ?? 0)
                try insert.bind(12, text: record.lastModifiedUserRecordID?.recordName ?? "")
                try insert.bind(13, text: record.recordChangeTag ?? "")
                try insert.run()
                if let insertText {
                    try insertText.bind(1, text: record.recordID.recordName)
                    try insertText.bind(2, text: text("title"))
                    try insertText.bind(3, text: text("notes"))
                    try insertText.bind(4, text: tags.compactMap { value -> String? in
                        if case .string(let tag) = value { return tag }
                        return nil
                    }.joined(separator: " "))
                    try insertText.run()
                }
            }
            try db.exec("COMMIT")
            try db.exec("ANALYZE")
        }

        /// The JSON text the first row's first column holds, as bytes.
        func json(_ statement: SQLiteStatement) throws -> [UInt8] {
            defer { try? statement.reset() }
            guard try statement.step() else { throw BenchFailure("SQLite returned no JSON") }
            return statement.withBlob(0) { Array($0) }
        }

        func close() { directory.remove() }
    }

    /// One page both sides produce as JSON: how Cumulus reads it, and SQLite's query.
    struct JSONPage {
        var label: String
        var sql: String
        var bind: (SQLiteStatement) throws -> Void
        var cumulus: (inout JSONWriter) throws -> Void
        var target: Target
    }

    static func jsonPages(_ data: QueryData, _ cumulus: CumulusStore, _ sizes: Sizes, _ report: Report) throws {
        report.section("query: pages as CloudKit JSON bytes, Cumulus from its stored records, SQLite by json_object")
        // What the items are as stored (system fields included): SQLite's rows.
        var stored: [Record] = []
        for chunk in stride(from: 0, to: data.items.count, by: 400) {
            let ids = data.items[chunk..<min(chunk + 400, data.items.count)].map(\.record.recordID)
            for item in try cumulus.db.fetch(ids, as: EngineSuite.actor) { stored.append(try item.result.get()) }
        }
        guard let zoneID = stored.first?.recordID.zoneID else { throw BenchFailure("no items to query") }
        let sqlite = try SQLiteColumns(stored)
        defer { sqlite.close() }
        let row = SQLiteColumns.rowJSON(owner: zoneID.ownerName, zone: zoneID.zoneName)
        func page(_ rest: String) -> String { "SELECT json_group_array(json(j)) FROM (SELECT \(row) AS j FROM items \(rest))" }
        // The page's rows are ordered and limited in a subquery, which json_group_array
        // sees as text to parse again; joining the rows' JSON as text does not. The
        // faster of the two is the baseline.
        func concatenated(_ sql: String) -> String {
            sql.replacingOccurrences(of: "SELECT json_group_array(json(j)) FROM", with: "SELECT '[' || coalesce(group_concat(j, ','), '') || ']' FROM")
        }
        report.note(
            "SQLite \(SQLiteDatabase.libraryVersion): items(name PRIMARY KEY, list, dueDate, priority, done, title, notes, "
                + "tags as JSON text, created, creator, modified, modifier, tag) WITHOUT ROWID, indexes (list, name) and "
                + "(dueDate, name), mmap_size 1 GiB, WAL; a page is SELECT json_group_array(json_object(…)) over the rows, "
                + "or the rows' json_object(…) joined by group_concat (the faster is the baseline), copied out; Cumulus: the page written by RecordJSONWriter into a JSONWriter, copied out. "
                + "Both parsed and compared first; \(sizes.rounds) alternating rounds, best of each")

        let list = data.lists[data.lists.count / 2].name
        let listReference = FieldValue.reference(Reference(recordID: RecordID(recordName: list, zoneID: SampleData.zone)))
        let byDue = Query(recordType: "TodoItem", sort: [QuerySort(key: .field("dueDate"))])
        var ranged = byDue
        ranged.filters = [QueryFilter(key: .field("priority"), comparator: .greaterThanOrEquals, value: .int64(2))]

        // The deep page's cursor and the SQLite key it starts after, found untimed.
        var cursor = try cumulus.db.query(byDue, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor).cursor
        for _ in 1..<(sizes.deepPage - 1) {
            guard let next = cursor else { break }
            cursor = try cumulus.db.query(continuing: next, resultsLimit: pageSize, as: EngineSuite.actor).cursor
        }
        guard let deepCursor = cursor else { throw BenchFailure("the sorted query's cursors ended before page \(sizes.deepPage)") }
        let keyset = try sqlite.db.prepare(
            "SELECT dueDate, name FROM items ORDER BY dueDate, name LIMIT 1 OFFSET \((sizes.deepPage - 1) * pageSize - 1)")
        guard try keyset.step(), let lastName = keyset.text(1) else { throw BenchFailure("SQLite has no deep page") }
        let lastDue = keyset.int64(0)

        var random = SeededRandom(seed: 77)
        let ids = (0..<100).map { _ in data.items[Int(random.next() % UInt64(data.items.count))].record.recordID }
        let wanted = ids.enumerated().map { "(\($0.offset), '\($0.element.recordName)')" }.joined(separator: ", ")

        func queryWriter(_ run: @escaping ((StoredRecordPage) throws -> Void) throws -> QueryCursor?) -> (inout JSONWriter) throws -> Void {
            { json in
                json.beginArray()
                _ = try run { page in
                    for record in page.records { try RecordJSONWriter.write(stored: record, .init(), into: &json) }
                }
                json.endArray()
            }
        }
        let db = cumulus.db
        var pages: [JSONPage] = []
        // Token search: the pair of tokens whose results come closest to the suite's
        // count, every result in one page, in name order on both sides.
        if sqlite.hasFTS5, let pair = tokenPairs(data, sizes).first {
            let search = try PredicateParser.query(
                recordType: "TodoItem", predicate: "self CONTAINS '\(pair.first) \(pair.second)'")
            pages.append(
                JSONPage(
                    label: "token search, 2 tokens (\(pair.expected.count))",
                    sql: page("JOIN (SELECT name FROM items_fts WHERE items_fts MATCH ?1) USING (name) ORDER BY name"),
                    bind: { try $0.bind(1, text: "\"\(pair.first)\" AND \"\(pair.second)\"") },
                    cumulus: queryWriter { body in
                        try db.query(search, in: SampleData.zone, resultsLimit: Database.maxResultsLimit, as: EngineSuite.actor, body)
                    },
                    target: .atLeast(1)))
        }
        pages += [
            JSONPage(
                label: "children of one list (100)", sql: page("WHERE list = ?1 ORDER BY name"),
                bind: { try $0.bind(1, text: list) },
                cumulus: queryWriter { body in
                    try db.query(
                        Query(recordType: "TodoItem", filters: [QueryFilter(key: .field("list"), comparator: .equals, value: listReference)]),
                        in: SampleData.zone, resultsLimit: Database.maxResultsLimit, as: EngineSuite.actor, body)
                },
                target: .atLeast(1)),
            JSONPage(
                label: "sorted by dueDate, first page", sql: page("ORDER BY dueDate, name LIMIT \(pageSize)"), bind: { _ in },
                cumulus: queryWriter { body in
                    try db.query(byDue, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor, body)
                },
                target: .atLeast(1)),
            JSONPage(
                label: "sorted by dueDate, page \(sizes.deepPage)",
                sql: page("WHERE (dueDate, name) > (?1, ?2) ORDER BY dueDate, name LIMIT \(pageSize)"),
                bind: { statement in
                    try statement.bind(1, int: lastDue)
                    try statement.bind(2, text: lastName)
                },
                cumulus: queryWriter { body in
                    try db.query(continuing: deepCursor, resultsLimit: pageSize, as: EngineSuite.actor, body)
                },
                target: .atLeast(1)),
            JSONPage(
                label: "priority >= 2 sorted by dueDate", sql: page("WHERE priority >= 2 ORDER BY dueDate, name LIMIT \(pageSize)"),
                bind: { _ in },
                cumulus: queryWriter { body in
                    try db.query(ranged, in: SampleData.zone, resultsLimit: pageSize, as: EngineSuite.actor, body)
                },
                target: .atLeast(1)),
            JSONPage(
                label: "fetch 100 by ID",
                sql: "WITH wanted(ord, name) AS (VALUES \(wanted)) SELECT json_group_array(json(j)) FROM "
                    + "(SELECT \(row) AS j FROM wanted JOIN items USING (name) ORDER BY ord)",
                bind: { _ in },
                cumulus: { json in
                    json.beginArray()
                    try db.fetch(ids, as: EngineSuite.actor) { _, item in
                        try RecordJSONWriter.write(stored: try item.get(), .init(), into: &json)
                    }
                    json.endArray()
                },
                target: .atLeast(2)),
        ]

        for entry in pages {
            let statements = [try sqlite.db.prepare(entry.sql), try sqlite.db.prepare(concatenated(entry.sql))]
            var statement = statements[0]
            func sqliteJSON() throws -> [UInt8] {
                try entry.bind(statement)
                return try sqlite.json(statement)
            }
            let grouped = try JSONValue.parse(Data(try sqliteJSON()))
            statement = statements[1]
            guard try JSONValue.parse(Data(try sqliteJSON())) == grouped else {
                throw BenchFailure("\(entry.label): SQLite's two forms of the page differ")
            }
            func cumulusJSON() throws -> [UInt8] {
                var json = JSONWriter(capacity: 128 << 10)
                try entry.cumulus(&json)
                return json.bytes
            }
            // The same records, member for member, or the figure is not a comparison.
            let ours = try JSONValue.parse(Data(try cumulusJSON()))
            let theirs = try JSONValue.parse(Data(try sqliteJSON()))
            let count = ours.arrayValue?.count ?? 0
            var mismatch: String?
            if ours != theirs {
                let first = zip(ours.arrayValue ?? [], theirs.arrayValue ?? []).first { $0 != $1 }
                mismatch = "\(entry.label): the answers differ (\(count) vs \(theirs.arrayValue?.count ?? 0) records)"
                    + (first.map { "; first difference: \($0.0["recordName"]?.stringValue ?? "?")" } ?? "")
            }
            var oursRate = 0.0
            var theirsRate = 0.0
            var forms = [0.0, 0.0]
            for _ in 0..<sizes.rounds {
                for (index, form) in statements.enumerated() {
                    statement = form
                    forms[index] = max(forms[index], try callRate(minSeconds: sizes.minSeconds) { _ = try sqliteJSON() })
                }
                oursRate = max(oursRate, try callRate(minSeconds: sizes.minSeconds) { _ = try cumulusJSON() })
            }
            theirsRate = forms.max() ?? 0
            report.compare(
                "\(entry.label), JSON", Figure(checked(oursRate, mismatch, report), "pages/s"),
                baseline: forms[1] > forms[0] ? "SQLite json_object, joined" : "SQLite json_group_array",
                Figure(theirsRate, "pages/s"), target: entry.target)
            report.detail(
                "  page", "\(count) records; SQLite json_group_array \(Report.format(forms[0])), joined \(Report.format(forms[1])) pages/s")
        }
    }
}
