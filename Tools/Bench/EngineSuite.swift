import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

/// The engine's figures: durable single-record saves, 400-record operations, fetch
/// by ID and a three-level cascading delete, each against SQLite doing the same to
/// the same rows (the same `RecordCodec` bytes as a BLOB) in the same process.
enum EngineSuite: BenchSuite {
    static let name = "engine"

    /// How much work each measurement does; `--quick` shrinks all of it.
    struct Sizes {
        /// Timed single-record saves per Cumulus run, by concurrent caller count.
        var saves: [(callers: Int, count: Int)]
        /// Timed single-row commits per SQLite run.
        var sqliteSaves: Int
        /// Untimed saves before each durable run.
        var warmUp: Int
        /// Durable runs and fetch passes are repeated this often, alternating with the
        /// baseline, and the best of each kept.
        var rounds: Int
        /// The tree deleted at the end: children of the root, grandchildren per child.
        /// Descendants = children × (1 + grandchildrenPerChild).
        var children: Int
        var grandchildrenPerChild: Int

        var descendants: Int { children * (1 + grandchildrenPerChild) }

        // 200 × (1 + 499) = 100,000 descendants. Not 100 children of ~1,000: the
        // engine (like CloudKit) allows at most 750 deleteSelf references per target.
        static let full = Sizes(
            saves: [(1, 1_000), (64, 10_000)], sqliteSaves: 1_000, warmUp: 100, rounds: 2,
            children: 200, grandchildrenPerChild: 499)
        static let quick = Sizes(
            saves: [(1, 200), (64, 2_000)], sqliteSaves: 200, warmUp: 50, rounds: 1,
            children: 20, grandchildrenPerChild: 499)
    }

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        report.section("engine: workload")
        report.note(
            "SampleData to-do items (~400-byte records) in custom zone \(SampleData.zone.zoneName) of a private database; "
                + "SQLite stores RecordCodec.encode of the same records as a BLOB")
        report.note(
            "SQLite \(SQLiteDatabase.libraryVersion): WAL, synchronous=FULL, foreign_keys=ON; "
                + "records(zone, name, type, data BLOB, owner, PRIMARY KEY(zone, name), "
                + "FOREIGN KEY(zone, owner) REFERENCES records(zone, name) ON DELETE CASCADE), index on (zone, owner)")
        report.note(
            "SQLite with the same indexes (lines marked so): the same table plus what the production schema declares on "
                + "TodoItem: indexes on (zone, dueDate, name) and (zone, priority, name), and FTS5 over title, notes and "
                + "tags (external content, kept by AFTER INSERT / AFTER DELETE triggers); the targets stay on the plain table")
        if quick {
            report.note(
                "--quick: smaller N (\(sizes.descendants) descendants instead of 100,000, fewer saves, one round); "
                    + "figures are not comparable with a full run")
        }
        try await singleSaves(sizes, report)
        try await tree(sizes, report)
    }
}

// MARK: - Data

/// One record as both stores get it: the record for Cumulus, its `RecordCodec`
/// bytes for SQLite, and the name of its deleteSelf owner (the SQLite `owner`).
struct EngineRow: Sendable {
    let record: Record
    let bytes: [UInt8]
    let owner: String?

    init(_ record: Record, owner: String?) throws {
        self.record = record
        self.bytes = try RecordCodec.encode(record)
        self.owner = owner
    }

    var name: String { record.recordID.recordName }
    var id: RecordID { record.recordID }
}

extension EngineSuite {
    /// The acting user: the sample database's owner.
    static var actor: String { SampleData.database.owner }

    /// The `index`th sample to-do item, renamed `name` if given, whose `list`
    /// reference (deleteSelf) points at `owner`, or is removed for `nil`.
    static func todo(_ index: Int, name: String? = nil, type: String? = nil, owner: String?, rng: inout SeededRandom)
        throws -> EngineRow
    {
        var record = SampleData.todoItem(index, rng: &rng)
        if let name { record.recordID = RecordID(recordName: name, zoneID: SampleData.zone) }
        if let type { record.recordType = type }
        record["list"] = owner.map {
            .reference(Reference(recordID: RecordID(recordName: $0, zoneID: SampleData.zone), action: .deleteSelf))
        }
        return try EngineRow(record, owner: owner)
    }

    /// A to-do list: the owner the items of the save runs refer to (it exists in both
    /// stores, so Cumulus and SQLite both check and index a real reference).
    static func list(_ index: Int, rng: inout SeededRandom) throws -> EngineRow {
        try todo(index, name: "list-\(index)", type: "TodoList", owner: nil, rng: &rng)
    }
}

/// Bytes this process has caused to be written to storage so far (`write_bytes` of
/// /proc/self/io, Linux), or `nil` where that is not available. Counted when pages are
/// dirtied, so it includes what fdatasync will have to flush.
func processWriteBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
        return Int(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
    }
    return nil
}

/// CPU time this process has used so far, user and system, in microseconds.
func processCPUMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func micros(_ time: timeval) -> Double { Double(time.tv_sec) * 1e6 + Double(time.tv_usec) }
    return micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// Bytes written since `before` (from `processWriteBytes`), divided by `count`.
func bytesWritten(since before: Int?, per count: Int) -> Double? {
    guard let before, let now = processWriteBytes(), count > 0 else { return nil }
    return Double(now - before) / Double(count)
}

// MARK: - Stores

/// A fresh Cumulus container with the sample zone, in its own directory.
final class CumulusStore: Sendable {
    let directory: ScratchDirectory
    let container: Container
    let db: Database

    /// A store whose sample database is in development (every field indexed just in
    /// time), or, given `productionSchema` (CloudKit schema text), in production with
    /// that schema imported first, as a deploy would put it in place.
    init(_ label: String, productionSchema: String? = nil) async throws {
        let directory = ScratchDirectory("engine-\(label)")
        let container = try Container(path: directory.path)
        let sample = SampleData.database
        if let productionSchema {
            try await container.importSchema(productionSchema, into: SchemaID(container: sample.container, environment: .production))
            db = container.privateDatabase(container: sample.container, user: sample.owner, environment: .production)
        } else {
            db = container.database(sample)
        }
        self.directory = directory
        self.container = container
        for (zone, result) in try await db.saveZones([SampleData.zone], as: EngineSuite.actor) {
            guard case .success = result else { throw BenchFailure("creating zone \(zone.zoneName): \(result)") }
        }
    }

    /// Saves `rows` (`.allKeys`) in operations of at most `perOperation` records;
    /// throws if any item failed.
    func save(_ rows: ArraySlice<EngineRow>, perOperation: Int = Limits.maxItemsPerOperation) async throws {
        var start = rows.startIndex
        while start < rows.endIndex {
            let end = min(rows.endIndex, start + perOperation)
            try Self.check(
                try await db.modify(saving: rows[start..<end].map(\.record), savePolicy: .allKeys, as: EngineSuite.actor))
            start = end
        }
    }

    /// How many of `ids` exist (fetched in batches of 400).
    func existing(_ ids: [RecordID]) throws -> Int {
        var found = 0
        var start = 0
        while start < ids.count {
            let end = min(ids.count, start + 400)
            for item in try db.fetch(Array(ids[start..<end]), as: EngineSuite.actor) {
                if case .success = item.result { found += 1 }
            }
            start = end
        }
        return found
    }

    static func check(_ result: ModifyResult) throws {
        if let (id, error) = result.itemErrors.first {
            throw BenchFailure("modify failed for \(id.recordName) (\(result.itemErrors.count) items): \(error)")
        }
    }

    func close() {
        container.close()
        directory.remove()
    }
}

/// A fresh SQLite database (WAL, synchronous=FULL, foreign keys on) with the
/// `records` table, in its own directory.
final class SQLiteRecords {
    /// What the table is indexed by besides its primary key and owner index.
    enum Indexes {
        /// Nothing more: SQLite's cheapest way to hold the rows, the baseline the
        /// targets are set against.
        case ownerOnly
        /// What the production schema declares on TodoItem
        /// (``EngineSuite/productionSchema``): `dueDate` and `priority` indexes and an
        /// FTS5 index over `title`, `notes` and `tags`, kept by triggers (inserts and
        /// deletes, cascaded ones included) as SQLite's documentation shows for an
        /// external-content table. The like-for-like comparison: the same indexes
        /// Cumulus maintains on every save and delete.
        case likeProduction
    }

    let directory: ScratchDirectory
    let db: SQLiteDatabase
    let indexes: Indexes
    private let insertRow: SQLiteStatement
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let zone = SampleData.zone.zoneName

    init(_ label: String, indexes: Indexes = .ownerOnly) throws {
        directory = ScratchDirectory("sqlite-\(label)")
        self.indexes = indexes
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        db = try SQLiteDatabase(path: directory.path + "/records.sqlite")
        try db.exec("PRAGMA journal_mode=WAL")
        let mode = try db.prepare("PRAGMA journal_mode")
        guard try mode.step(), mode.text(0) == "wal" else { throw BenchFailure("SQLite did not switch to WAL") }
        try db.exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON")
        guard try db.scalar("PRAGMA foreign_keys") == 1, try db.scalar("PRAGMA synchronous") == 2 else {
            throw BenchFailure("SQLite did not accept foreign_keys=ON / synchronous=FULL")
        }
        switch indexes {
        case .ownerOnly:
            try db.exec(
                """
                CREATE TABLE records(
                    zone TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL, owner TEXT,
                    PRIMARY KEY(zone, name),
                    FOREIGN KEY(zone, owner) REFERENCES records(zone, name) ON DELETE CASCADE);
                CREATE INDEX records_owner ON records(zone, owner);
                """)
            insertRow = try db.prepare("INSERT INTO records(zone, name, type, data, owner) VALUES (?1, ?2, ?3, ?4, ?5)")
        case .likeProduction:
            try db.exec(Self.likeProductionSchema)
            insertRow = try db.prepare(
                """
                INSERT INTO records(zone, name, type, data, owner, title, notes, tags, dueDate, priority)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                """)
        }
        begin = try db.prepare("BEGIN")
        commit = try db.prepare("COMMIT")
    }

    /// ``Indexes/likeProduction``'s tables. The field indexes are partial, on TodoItem
    /// rows only, as the production schema declares them on TodoItem only; the text
    /// columns are NULL for other types, which FTS5 indexes as nothing.
    static let likeProductionSchema = """
        CREATE TABLE records(
            zone TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL, owner TEXT,
            title TEXT, notes TEXT, tags TEXT, dueDate INTEGER, priority INTEGER,
            PRIMARY KEY(zone, name),
            FOREIGN KEY(zone, owner) REFERENCES records(zone, name) ON DELETE CASCADE);
        CREATE INDEX records_owner ON records(zone, owner);
        CREATE INDEX records_due ON records(zone, dueDate, name) WHERE type = 'TodoItem';
        CREATE INDEX records_priority ON records(zone, priority, name) WHERE type = 'TodoItem';
        CREATE VIRTUAL TABLE records_fts USING fts5(title, notes, tags, content='records', content_rowid='rowid');
        CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN
            INSERT INTO records_fts(rowid, title, notes, tags) VALUES (new.rowid, new.title, new.notes, new.tags);
        END;
        CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN
            INSERT INTO records_fts(records_fts, rowid, title, notes, tags)
            VALUES ('delete', old.rowid, old.title, old.notes, old.tags);
        END;
        """

    /// Inserts `rows`, `perTransaction` per transaction; 1 means autocommit, one
    /// durable transaction per INSERT.
    func insert(_ rows: ArraySlice<EngineRow>, perTransaction: Int) throws {
        var start = rows.startIndex
        while start < rows.endIndex {
            let end = min(rows.endIndex, start + perTransaction)
            if perTransaction > 1 { try begin.run() }
            for row in rows[start..<end] {
                try insertRow.bind(1, text: zone)
                try insertRow.bind(2, text: row.name)
                try insertRow.bind(3, text: row.record.recordType)
                try insertRow.bind(4, blob: row.bytes)
                try insertRow.bind(5, optionalText: row.owner)
                if indexes == .likeProduction { try bindIndexedColumns(of: row.record) }
                try insertRow.run()
            }
            if perTransaction > 1 { try commit.run() }
            start = end
        }
    }

    /// The indexed columns of ``Indexes/likeProduction``, from the record's fields
    /// (TodoItem only; NULL for other types, as their entries are absent in Cumulus).
    private func bindIndexedColumns(of record: Record) throws {
        let item = record.recordType == "TodoItem"
        func text(_ key: String) -> String? {
            guard item else { return nil }
            switch record[key] {
            case .string(let value)?: return value
            case .list(let values)?:
                return values.compactMap { if case .string(let value) = $0 { value } else { nil } }.joined(separator: " ")
            default: return nil
            }
        }
        func integer(_ key: String) -> Int64? {
            guard item else { return nil }
            switch record[key] {
            case .int64(let value)?: return value
            case .timestamp(let value)?: return value.millisecondsSince1970
            default: return nil
            }
        }
        try insertRow.bind(6, optionalText: text("title"))
        try insertRow.bind(7, optionalText: text("notes"))
        try insertRow.bind(8, optionalText: text("tags"))
        if let due = integer("dueDate") { try insertRow.bind(9, int: due) } else { try insertRow.bindNull(9) }
        if let priority = integer("priority") { try insertRow.bind(10, int: priority) } else { try insertRow.bindNull(10) }
    }

    /// Rows in the table.
    func count() throws -> Int64 { try db.scalar("SELECT count(*) FROM records") }

    /// Throws unless the FTS5 index holds exactly what the table does (``Indexes/likeProduction``
    /// only): after a cascade, that the triggers removed every deleted row's words.
    func checkTextIndex() throws {
        guard indexes == .likeProduction else { return }
        try db.exec("INSERT INTO records_fts(records_fts, rank) VALUES ('integrity-check', 1)")
    }

    func close() { directory.remove() }
}
