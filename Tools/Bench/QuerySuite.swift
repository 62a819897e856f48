import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

/// Query figures: the children of one owner, a sorted query paged by cursor (first
/// page and a deep page) and a two-token search, each against SQLite answering the
/// same question over the same rows with the index that suits it, in the same run.
/// Both sides must return the same records; if they do not, the figure is reported
/// as missed with the difference (a comparison of different answers means nothing).
enum QuerySuite: BenchSuite {
    static let name = "query"

    /// How much data and work; `--quick` shrinks all of it.
    struct Sizes {
        /// To-do lists, each the `deleteSelf` owner of `itemsPerList` items.
        var lists: Int
        var itemsPerList: Int
        /// Timed passes, alternating with the baseline; the best of each is kept.
        var rounds: Int
        /// The deep page of the unfiltered sorted query (1-based), and of the filtered one
        /// (about half the items match `priority >= 2`).
        var deepPage: Int
        var filteredDeepPage: Int
        /// Results wanted per token search (pairs are picked from the data to come close).
        var tokenResults: Int
        /// Distinct token pairs searched.
        var tokenPairs: Int
        /// Each repeated measurement runs at least this long.
        var minSeconds: Double

        var items: Int { lists * itemsPerList }

        static let full = Sizes(
            lists: 1_000, itemsPerList: 100, rounds: 2, deepPage: 500, filteredDeepPage: 250, tokenResults: 300,
            tokenPairs: 10, minSeconds: 0.5)
        static let quick = Sizes(
            lists: 100, itemsPerList: 100, rounds: 1, deepPage: 50, filteredDeepPage: 25, tokenResults: 30,
            tokenPairs: 10, minSeconds: 0.25)
    }

    /// Results per page of the sorted queries (the engine's default).
    static let pageSize = 100
    /// Records per `modify` / per SQLite transaction while loading.
    static let loadBatch = Limits.maxItemsPerOperation

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        report.section("query: workload")
        report.note(
            "the \"full records\" sections are information: Cumulus returns decoded Records (the Swift API), SQLite copies "
                + "blobs out, not the same output; the targets are the last section's, where both write the same CloudKit JSON")
        var data: QueryData?
        let generation = try measure { data = try QueryData.make(sizes) }
        guard let data else { throw BenchFailure("query data was not generated") }
        report.note(
            "\(Report.grouped(Int64(sizes.items))) TodoItem records (title, notes, dueDate, priority, done, tags, list: deleteSelf reference) "
                + "in \(Report.grouped(Int64(sizes.lists))) TodoList records, \(sizes.itemsPerList) items each, in custom zone "
                + "\(SampleData.zone.zoneName) of a private database; notes drawn from a \(QueryData.vocabulary.count)-word "
                + "Zipf vocabulary so tokens range from common to rare; generated in \(Report.format(generation)) s")
        report.note(
            "SQLite \(SQLiteDatabase.libraryVersion): WAL, synchronous=FULL; items(id INTEGER PRIMARY KEY, name UNIQUE, "
                + "list, dueDate, priority, data BLOB = RecordCodec.encode of the same record) + lists(name, data); "
                + "indexes on (list) and (dueDate, name); one read per query, blobs copied out")
        if quick {
            report.note(
                "--quick: smaller N (\(Report.grouped(Int64(sizes.items))) items instead of 100,000, deep page \(sizes.deepPage) instead of 500, "
                    + "one round); figures are not comparable with a full run")
        }

        let sqlite = try SQLiteItems()
        defer { sqlite.close() }
        let sqliteLoad = try measure { try sqlite.load(data) }
        report.note(
            "loaded, untimed: SQLite in \(Report.format(sqliteLoad)) s (\(loadBatch) rows per transaction, token index: "
                + "\(sqlite.tokenIndex.label))")
        // Production, with the schema that declares what these queries use (and no
        // more), as a deployed app would have: issue 14's footing for every figure.
        let cumulus = try await CumulusStore("query", productionSchema: EngineSuite.productionSchema)
        defer { cumulus.close() }
        let cumulusLoad = try await measureAsync {
            try await cumulus.save(data.lists[...])
            try await cumulus.save(data.items[...])
        }
        report.note(
            "loaded, untimed: Cumulus in \(Report.format(cumulusLoad)) s (sequential Database.modify of "
                + "\(loadBatch) records, .allKeys)")
        let rows = try sqlite.db.scalar("SELECT count(*) FROM items")
        guard rows == data.items.count else { throw BenchFailure("SQLite holds \(rows) items, not \(data.items.count)") }

        try children(data, cumulus, sqlite, sizes, report)
        try sortedPages(data, cumulus, sqlite, sizes, report)
        try tokenSearch(data, cumulus, sqlite, sizes, report)
        try jsonPages(data, cumulus, sizes, report)
    }

    // MARK: - Helpers

    /// Calls of `body` per second: `body` is repeated until `minSeconds` have passed
    /// (at least `minCalls` times).
    static func callRate(minSeconds: Double, minCalls: Int = 5, _ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var calls = 0
        var elapsed = 0.0
        repeat {
            try body()
            calls += 1
            elapsed = seconds(clock.now - start)
        } while elapsed < minSeconds || calls < minCalls
        return Double(calls) / elapsed
    }

    /// The figure to print: `value` when both sides gave the same answer, else 0
    /// (so the line reads MISSED) with the difference as a note.
    static func checked(_ value: Double, _ mismatch: String?, _ report: Report) -> Double {
        guard let mismatch else { return value }
        report.note("WRONG RESULTS, figure counted as missed: \(mismatch)")
        return 0
    }

    /// The names in a page of results, in order.
    static func names(_ records: [Record]) -> [String] { records.map(\.recordID.recordName) }

    /// A short description of how two ordered name lists differ.
    static func difference(_ cumulus: [String], _ sqlite: [String], _ left: String = "Cumulus", _ right: String = "SQLite")
        -> String?
    {
        guard cumulus != sqlite else { return nil }
        let missing = Set(sqlite).subtracting(cumulus)
        let extra = Set(cumulus).subtracting(sqlite)
        var text = "\(left) \(cumulus.count) results, \(right) \(sqlite.count)"
        if missing.isEmpty && extra.isEmpty {
            let first = zip(cumulus, sqlite).enumerated().first { $0.element.0 != $0.element.1 }
            text += "; same records, different order"
            if let first { text += " (first at #\(first.offset): \(first.element.0) vs \(first.element.1))" }
        } else {
            text += "; \(missing.count) missing from \(left) (e.g. \(missing.sorted().prefix(3).joined(separator: ", ")))"
            text += "; \(extra.count) only in \(left) (e.g. \(extra.sorted().prefix(3).joined(separator: ", ")))"
        }
        return text
    }
}

// MARK: - Data

/// The records both stores get, with the columns SQLite indexes.
struct QueryData {
    struct Item {
        let row: EngineRow
        let list: String
        let dueDate: Int64
        let priority: Int64
        /// The string fields, for the SQLite token index: title, notes, tags (space-joined).
        let title: String
        let notes: String
        let tags: String
    }

    let lists: [EngineRow]
    let items: [EngineRow]
    let columns: [Item]

    /// Words of to-do notes, most frequent first (drawn with Zipf weights 1/(rank + 1)).
    static let vocabulary: [String] = """
        the to and for buy call check send book pay fix clean email order pick up write review update finish \
        plan meeting report milk bread groceries mum dad kids school doctor dentist appointment car bike garage \
        garden plants water rent bills bank tax insurance passport flights hotel Lisbon Paris Berlin train tickets \
        parcel post office laundry dishes kitchen bathroom bedroom windows paint shelves lamp sofa carpet boiler \
        heating plumber electrician landlord lease contract invoice receipt budget savings pension salary payslip \
        quarterly annual slides presentation draft proposal client supplier deadline project roadmap backlog sprint \
        release deploy server database backup password laptop phone charger printer ink paper stamps envelope \
        birthday present card cake party wedding anniversary flowers wine cheese coffee tea sugar flour eggs butter \
        apples bananas oranges lemons onions garlic tomatoes potatoes rice pasta beans soup chicken fish salmon \
        yoghurt cereal honey jam vitamins medicine prescription pharmacy vet dog cat food litter walk run gym \
        swim yoga tennis football match season membership renew cancel subscription newsletter magazine library \
        return borrow lend repair replace install upgrade download sync photos album frame print scan shred \
        archive folder files documents forms signature notary lawyer accountant council permit licence registration \
        recycling bins compost hedge lawn mower fence gate shed roof gutter drain leak tap shower toilet towel \
        sheets pillow blanket curtains blinds rug vacuum mop bucket detergent soap shampoo toothpaste razor \
        haircut barber nails massage physio optician glasses lenses hearing vaccine checkup bloodtest results \
        Monday Tuesday Wednesday Thursday Friday Saturday weekend morning evening tonight tomorrow urgent soon \
        later maybe remember ask confirm arrange reschedule postpone remind follow chase collect deliver drop \
        return measure compare quote estimate negotiate sign submit approve
        """.split(separator: " ").map(String.init).filter { !$0.isEmpty }

    static let tagWords = ["home", "work", "errands", "urgent", "health", "finance", "travel", "garden", "kids", "car"]

    /// Cumulative Zipf weights over `vocabulary`.
    static let cumulativeWeights: [Double] = {
        var total = 0.0
        return vocabulary.indices.map { rank in
            total += 1 / Double(rank + 1)
            return total
        }
    }()

    static func word(_ rng: inout SeededRandom) -> String {
        let total = cumulativeWeights.last ?? 1
        let target = Double(rng.next() % 1_000_000_007) / 1_000_000_007 * total
        var low = 0
        var high = cumulativeWeights.count - 1
        while low < high {
            let mid = (low + high) / 2
            if cumulativeWeights[mid] < target { low = mid + 1 } else { high = mid }
        }
        return vocabulary[low]
    }

    static func phrase(_ count: Int, _ rng: inout SeededRandom) -> String {
        (0..<count).map { _ in word(&rng) }.joined(separator: " ")
    }

    static func listName(_ index: Int) -> String { "list-\(index)" }

    static func make(_ sizes: QuerySuite.Sizes) throws -> QueryData {
        var rng = SeededRandom(seed: 41)
        let zone = SampleData.zone
        let owner = RecordID(recordName: SampleData.database.owner)
        let lists = try (0..<sizes.lists).map { index -> EngineRow in
            var record = Record(recordType: "TodoList", recordID: RecordID(recordName: listName(index), zoneID: zone))
            record["title"] = .string(phrase(2 + Int(rng.next() % 3), &rng))
            record.creationDate = Timestamp(millisecondsSince1970: 1_780_000_000_000 + Int64(index) * 1000)
            record.modificationDate = record.creationDate
            record.creatorUserRecordID = owner
            record.lastModifiedUserRecordID = owner
            return try EngineRow(record, owner: nil)
        }
        var items: [EngineRow] = []
        var columns: [Item] = []
        items.reserveCapacity(sizes.items)
        columns.reserveCapacity(sizes.items)
        for index in 0..<sizes.items {
            // Consecutive items share a list, so one 400-record operation touches 4 lists.
            let list = listName(index / sizes.itemsPerList)
            var record = Record(
                recordType: "TodoItem",
                recordID: RecordID(recordName: "item-\(index)-\(rng.next() % 1_000_000)", zoneID: zone))
            let title = phrase(3 + Int(rng.next() % 4), &rng)
            let notes = phrase(12 + Int(rng.next() % 20), &rng)
            let dueDate = 1_790_000_000_000 + Int64(rng.next() % 10_000_000_000)
            let priority = Int64(rng.next() % 4)
            let tags = (0..<Int(rng.next() % 4)).map { _ in tagWords[Int(rng.next() % UInt64(tagWords.count))] }
            record["title"] = .string(title)
            record["notes"] = .string(notes)
            record["dueDate"] = .timestamp(Timestamp(millisecondsSince1970: dueDate))
            record["priority"] = .int64(priority)
            record["done"] = .int64(Int64(rng.next() % 2))
            record["tags"] = .list(tags.map { .string($0) })
            record["list"] = .reference(
                Reference(recordID: RecordID(recordName: list, zoneID: zone), action: .deleteSelf))
            record.creationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index) * 1000)
            record.modificationDate = record.creationDate
            record.creatorUserRecordID = owner
            record.lastModifiedUserRecordID = owner
            record.recordChangeTag = String(rng.next() % 0xFFFF_FFFF, radix: 36)
            let row = try EngineRow(record, owner: list)
            items.append(row)
            columns.append(
                Item(row: row, list: list, dueDate: dueDate, priority: priority, title: title, notes: notes,
                     tags: tags.joined(separator: " ")))
        }
        return QueryData(lists: lists, items: items, columns: columns)
    }
}

// MARK: - SQLite

/// The SQLite side: items with their indexed columns and blob, lists, and a token
/// index (FTS5 when the library has it, else a `(token, item)` table).
final class SQLiteItems {
    enum TokenIndex {
        case fts5
        case tokenTable

        var label: String {
            switch self {
            case .fts5: "FTS5 (CREATE VIRTUAL TABLE items_fts USING fts5(title, notes, tags, content=''))"
            case .tokenTable: "FTS5 unavailable: tokens(token, item) table, PRIMARY KEY(token, item), INTERSECT"
            }
        }
    }

    let directory: ScratchDirectory
    let db: SQLiteDatabase
    let tokenIndex: TokenIndex

    init() throws {
        directory = ScratchDirectory("sqlite-query")
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        db = try SQLiteDatabase(path: directory.path + "/items.sqlite")
        try db.exec("PRAGMA journal_mode=WAL")
        let mode = try db.prepare("PRAGMA journal_mode")
        guard try mode.step(), mode.text(0) == "wal" else { throw BenchFailure("SQLite did not switch to WAL") }
        try db.exec("PRAGMA synchronous=FULL")
        guard try db.scalar("PRAGMA synchronous") == 2 else { throw BenchFailure("SQLite did not accept synchronous=FULL") }
        try db.exec(
            """
            CREATE TABLE lists(name TEXT PRIMARY KEY, data BLOB NOT NULL);
            CREATE TABLE items(
                id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, list TEXT NOT NULL REFERENCES lists(name),
                dueDate INTEGER NOT NULL, priority INTEGER NOT NULL, data BLOB NOT NULL);
            CREATE INDEX items_list ON items(list);
            CREATE INDEX items_due ON items(dueDate, name);
            """)
        do {
            try db.exec("CREATE VIRTUAL TABLE items_fts USING fts5(title, notes, tags, content='')")
            tokenIndex = .fts5
        } catch {
            try db.exec("CREATE TABLE tokens(token TEXT NOT NULL, item INTEGER NOT NULL, PRIMARY KEY(token, item)) WITHOUT ROWID")
            tokenIndex = .tokenTable
        }
    }

    /// Inserts lists and items, `QuerySuite.loadBatch` rows per transaction.
    func load(_ data: QueryData) throws {
        let insertList = try db.prepare("INSERT INTO lists(name, data) VALUES (?1, ?2)")
        let insertItem = try db.prepare(
            "INSERT INTO items(id, name, list, dueDate, priority, data) "
                + "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        let insertText = tokenIndex == .fts5
            ? try db.prepare("INSERT INTO items_fts(rowid, title, notes, tags) VALUES (?1, ?2, ?3, ?4)") : nil
        let insertToken = tokenIndex == .tokenTable
            ? try db.prepare("INSERT OR IGNORE INTO tokens(token, item) VALUES (?1, ?2)") : nil
        let begin = try db.prepare("BEGIN")
        let commit = try db.prepare("COMMIT")
        try begin.run()
        for list in data.lists {
            try insertList.bind(1, text: list.name)
            try insertList.bind(2, blob: list.bytes)
            try insertList.run()
        }
        try commit.run()
        var start = 0
        while start < data.columns.count {
            let end = min(data.columns.count, start + QuerySuite.loadBatch)
            try begin.run()
            for id in start..<end {
                let item = data.columns[id]
                try insertItem.bind(1, int: Int64(id))
                try insertItem.bind(2, text: item.row.name)
                try insertItem.bind(3, text: item.list)
                try insertItem.bind(4, int: item.dueDate)
                try insertItem.bind(5, int: item.priority)
                try insertItem.bind(6, blob: item.row.bytes)
                try insertItem.run()
                if let insertText {
                    try insertText.bind(1, int: Int64(id))
                    try insertText.bind(2, text: item.title)
                    try insertText.bind(3, text: item.notes)
                    try insertText.bind(4, text: item.tags)
                    try insertText.run()
                }
                if let insertToken {
                    // The tokens Cumulus indexes, so the table answers what the engine does.
                    for token in Tokenizer.tokens(of: item.row.record) {
                        try insertToken.bind(1, text: token)
                        try insertToken.bind(2, int: Int64(id))
                        try insertToken.run()
                    }
                }
            }
            try commit.run()
            start = end
        }
        try db.exec("ANALYZE")
        let untyped = try db.scalar(
            "SELECT count(*) FROM items WHERE typeof(id) != 'integer' OR typeof(dueDate) != 'integer' OR typeof(priority) != 'integer'")
        guard untyped == 0 else { throw BenchFailure("SQLite stored \(untyped) items with non-integer columns") }
    }

    /// SQLite's plan for `sql`, one line (`EXPLAIN QUERY PLAN`'s detail column).
    func plan(_ sql: String) throws -> String {
        let explain = try db.prepare("EXPLAIN QUERY PLAN " + sql)
        var steps: [String] = []
        while try explain.step() { steps.append(explain.text(3) ?? "?") }
        return steps.joined(separator: "; ")
    }

    func close() { directory.remove() }
}
