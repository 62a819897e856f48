import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation

// LMDB entries written per saved record, development beside production: development
// indexes every field just in time (QUERYABLE SORTABLE, strings also SEARCHABLE);
// production writes only the indexes its schema declares.

extension EngineSuite {
    /// The production schema of the entry count: on TodoItem exactly the indexes the
    /// query suite's queries need (`QuerySuite+Lookups.swift`, `QuerySuite+Pages.swift`),
    /// every other field the tree's records carry declared without options so saves
    /// are accepted. TodoList and Project are never queried.
    static let productionSchema = """
        DEFINE SCHEMA
            RECORD TYPE TodoItem (
                "___recordID" REFERENCE QUERYABLE,  // sorted pages with no filter
                list REFERENCE QUERYABLE,           // children of one owner: list == REFERENCE(…)
                dueDate TIMESTAMP SORTABLE,         // sorted pages: sort by dueDate
                priority INT64 SORTABLE,            // priority >= 2
                title STRING SEARCHABLE,            // self CONTAINS 'w1 w2' (SQLite's FTS5: title, notes, tags)
                notes STRING SEARCHABLE,
                tags LIST<STRING> SEARCHABLE,
                done INT64
            );
            RECORD TYPE TodoList (
                title STRING, notes STRING, dueDate TIMESTAMP, priority INT64, done INT64, tags LIST<STRING>,
                list REFERENCE
            );
            RECORD TYPE Project (
                title STRING, notes STRING, dueDate TIMESTAMP, priority INT64, done INT64, tags LIST<STRING>,
                list REFERENCE
            );
        """

    /// The query suite's kinds of query, one of each, on TodoItem: what
    /// ``productionSchema`` must allow.
    static func schemaCheckQueries() throws -> [(label: String, query: Query)] {
        let list = RecordID(recordName: "list-0", zoneID: SampleData.zone)
        let byDueDate = [QuerySort(key: .field("dueDate"))]
        return [
            ("list == REFERENCE(list-0)", Query(recordType: "TodoItem", filters: [
                QueryFilter(key: .field("list"), comparator: .equals, value: .reference(Reference(recordID: list))),
            ])),
            ("sort by dueDate", Query(recordType: "TodoItem", sort: byDueDate)),
            ("priority >= 2, sort by dueDate", Query(
                recordType: "TodoItem",
                filters: [QueryFilter(key: .field("priority"), comparator: .greaterThanOrEquals, value: .int64(2))],
                sort: byDueDate)),
            ("self CONTAINS 'buy milk'", try PredicateParser.query(recordType: "TodoItem", predicate: "self CONTAINS 'buy milk'")),
        ]
    }

    /// Runs each of ``schemaCheckQueries()`` (first page of 100) in `production` and in
    /// `development`, which hold the same records: `nil` when production accepts all
    /// and answers as development does, else what went wrong (a refused query is
    /// reported, not thrown, so the figures still print).
    static func checkProductionQueries(_ production: CumulusStore, beside development: CumulusStore) throws -> String? {
        var problems: [String] = []
        for (label, query) in try schemaCheckQueries() {
            do {
                let expected = try development.db.query(query, in: SampleData.zone, resultsLimit: 100, as: actor).records
                let got = try production.db.query(query, in: SampleData.zone, resultsLimit: 100, as: actor).records
                if let difference = QuerySuite.difference(
                    QuerySuite.names(got), QuerySuite.names(expected), "production", "development")
                {
                    problems.append("\(label): \(difference)")
                } else if got.isEmpty {
                    problems.append("\(label): no results in either environment")
                }
            } catch {
                problems.append("\(label): \(error)")
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }
}

/// Entries in every table of a data directory at one moment (`mdb_stat`'s
/// `ms_entries`, each duplicate of a `.dupSort` table counted). Two counts around a
/// run give the entries it added: overwrites of existing keys (a record's change-tag
/// bump, the log's metadata) add none, deletes subtract.
struct EntryCount {
    /// Every table's name, the log's then the views', in that order.
    static let names = DataLayout.Table.allCases.map(\.rawValue) + ViewTables.Name.allCases.map(\.rawValue)

    var tables: [String: Int]

    var total: Int { tables.values.reduce(0, +) }
    /// The query indexes, the part a schema decides.
    var queryIndexes: Int {
        (tables[ViewTables.Name.fieldIndex.rawValue] ?? 0) + (tables[ViewTables.Name.tokenIndex.rawValue] ?? 0)
    }

    /// What each table gained from `before` to `self`.
    func since(_ before: EntryCount) -> EntryCount {
        EntryCount(tables: tables.merging(before.tables.mapValues { -$0 }, uniquingKeysWith: +))
    }

    /// The tables that changed, in ``names`` order, each per `records`:
    /// "log 0.0025, …, records 1, byType 1, fieldIndex 3, …" (small shares, such as
    /// one log entry per 400-record commit, with enough digits to read).
    func breakdown(per records: Int) -> String {
        Self.names.compactMap { table in
            guard let entries = tables[table], entries != 0 else { return nil }
            let share = Double(entries) / Double(records)
            return "\(table) \(abs(share) < 0.1 ? String(format: "%.2g", share) : Report.format(share))"
        }.joined(separator: ", ")
    }
}

extension CumulusStore {
    /// The entries of every table of the store's data directory, in one snapshot.
    func entryCount() throws -> EntryCount {
        let store = container.store
        // Opening is cached after the container's own start-up, and must happen
        // outside a transaction.
        var counts: [String: Int] = [:]
        for (environment, home) in [(store.logEnvironment, DataLayout.Home.log), (store.environment, .views)] {
            let tables = try DataLayout.Table.allCases.filter { $0.home == home }.map {
                ($0.rawValue, try DataLayout.open($0, in: environment))
            } + (home == .views ? ViewTables.Name.allCases.map { ($0.rawValue, try $0.open(in: environment)) } : [])
            try environment.read { txn in
                for (name, table) in tables { counts[name] = try txn.count(table) }
            }
        }
        return EntryCount(tables: counts)
    }
}

extension SQLiteRecords {
    /// B-tree entries one INSERT into `records` adds: one per B-tree holding the table,
    /// counted from `sqlite_master` (the table's own, the automatic index of its
    /// PRIMARY KEY, records_owner). Each index gets an entry for every row, NULLs
    /// included, unless it is partial: a partial index is refused rather than guessed.
    func entriesPerRow() throws -> Int {
        let partial = try db.scalar("SELECT count(*) FROM pragma_index_list('records') WHERE partial")
        guard partial == 0 else { throw BenchFailure("records has \(partial) partial indexes: entries per row vary") }
        return Int(try db.scalar("SELECT count(*) FROM sqlite_master WHERE tbl_name = 'records' AND rootpage > 0"))
    }
}
