import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

extension EngineSuite {
    /// Items per list in the save runs (each list is the deleteSelf owner of its items).
    static let itemsPerList = 100

    /// Durable single-record saves per second with 1 and 64 concurrent callers, each
    /// save one `Database.modify` of one record, against SQLite committing one INSERT
    /// per transaction (autocommit, fsync of the WAL each time) from one connection.
    /// SQLite serializes writers, so its single-connection rate is also what it can
    /// do durably for 64 callers: both lines compare with it.
    static func singleSaves(_ sizes: Sizes, _ report: Report) async throws {
        report.section("engine: single-record saves (durable, fsync on every commit)")
        report.note(
            "Cumulus: N tasks each awaiting Database.modify(saving: [record], savePolicy: .allKeys); "
                + "SQLite: one connection, one INSERT per transaction (autocommit); same rows, each item referencing "
                + "(deleteSelf / FOREIGN KEY) one of its list records, which exist in both; "
                + "\(sizes.warmUp) untimed saves first; best of \(sizes.rounds) alternating rounds each")
        let largest = sizes.saves.map(\.count).max() ?? 0
        let total = sizes.warmUp + max(largest, sizes.sqliteSaves)
        var rng = SeededRandom(seed: 11)
        let lists = try (0..<((total + itemsPerList - 1) / itemsPerList)).map { try list($0, rng: &rng) }
        let items = try (0..<total).map { try todo($0, owner: "list-\($0 / itemsPerList)", rng: &rng) }

        var sqliteRate = 0.0
        var sqliteWritten: Double?
        var likeRate = 0.0
        var likeWritten: Double?
        var rawRate = 0.0
        for (callers, count) in sizes.saves {
            var best = 0.0
            var factor = 0.0
            var writerCPU = 0.0
            var processCPU = 0.0
            var written: Double?
            for _ in 0..<sizes.rounds {
                // The baseline does not depend on the caller count: measure it next to
                // the first runs, alternating, so drift hits both.
                if callers == sizes.saves.first?.callers {
                    let (rate, bytes) = try sqliteSingleRowRate(lists, items, warmUp: sizes.warmUp, timed: sizes.sqliteSaves)
                    sqliteRate = max(sqliteRate, rate)
                    sqliteWritten = bytes
                    let like = try sqliteSingleRowRate(
                        lists, items, warmUp: sizes.warmUp, timed: sizes.sqliteSaves, indexes: .likeProduction)
                    likeRate = max(likeRate, like.rate)
                    likeWritten = like.bytesWritten
                    rawRate = max(rawRate, try rawDurableRate(items, warmUp: sizes.warmUp, timed: sizes.sqliteSaves))
                }
                let run = try await cumulusSaveRate(lists, items, warmUp: sizes.warmUp, timed: count, callers: callers)
                written = run.bytesWritten
                if run.rate > best {
                    best = run.rate
                    factor = run.commitsPerGroup
                    writerCPU = run.writerCPU
                    processCPU = run.processCPU
                }
            }
            report.compare(
                "saves/s, \(callers) caller\(callers == 1 ? "" : "s")", Figure(best, "saves/s"),
                baseline: "SQLite 1 row/commit", Figure(sqliteRate, "commits/s"))
            // Targets are set against SQLite keeping what Cumulus keeps (issue 43).
            report.compare(
                "  (same, SQLite with the same indexes)", Figure(best, "saves/s"),
                baseline: "SQLite + indexes + FTS5", Figure(likeRate, "commits/s"), target: callers == 64 ? .atLeast(4) : nil)
            if callers == 1 {
                // The floor one caller nears: every save waits for its own fsync.
                report.compare(
                    "  (same, beside LMDB's own floor)", Figure(best, "saves/s"),
                    baseline: "raw LMDB 1 put/durable txn", Figure(rawRate, "commits/s"))
            }
            report.info("  commits per group (fsync)", Figure(factor, "commits"))
            // What the one serial thread pays per save bounds the rate however many call:
            // 1 s / this is the most saves a second one writer thread can take.
            report.info("  writer thread CPU per save", Figure(writerCPU, "µs"))
            // The callers' share (requests, checks, the derivations made ahead) runs on
            // the other cores: with both busy, this bounds the rate instead.
            report.info("  process CPU per save (all threads)", Figure(processCPU, "µs"))
            if let written, let sqliteWritten, let likeWritten {
                report.compare(
                    "  bytes written to disk per save", Figure(written, "B"), baseline: "SQLite, per commit",
                    Figure(sqliteWritten, "B"))
                report.compare(
                    "  (same, SQLite with the same indexes)", Figure(written, "B"), baseline: "SQLite + indexes + FTS5",
                    Figure(likeWritten, "B"), target: .atMost(1))
            }
        }
    }

    /// LMDB's floor for one caller: one durable write transaction per put of a
    /// record's stored bytes (fsync each time, as a lone save's commit is).
    private static func rawDurableRate(_ items: [EngineRow], warmUp: Int, timed: Int) throws -> Double {
        let directory = ScratchDirectory("saves-raw")
        defer { directory.remove() }
        let raw = try RawLMDB(path: directory.path, table: "records")
        let values = items.map(\.bytes)
        let count = min(timed, values.count - warmUp)
        try raw.put(values, 0..<warmUp, perTransaction: 1)
        let elapsed = try measure { try raw.put(values, warmUp..<(warmUp + count), perTransaction: 1) }
        return Double(count) / elapsed
    }

    /// Cumulus: `callers` tasks saving one record per `modify`. Returns the rate, the
    /// mean commits per write transaction, the bytes written per save, and the writer
    /// thread's CPU per save in microseconds (`LogWriter.Statistics.cpu`) and the
    /// whole process's.
    private static func cumulusSaveRate(
        _ lists: [EngineRow], _ items: [EngineRow], warmUp: Int, timed: Int, callers: Int
    ) async throws -> (rate: Double, commitsPerGroup: Double, bytesWritten: Double?, writerCPU: Double, processCPU: Double) {
        let store = try await CumulusStore("saves-\(callers)", productionSchema: productionSchema)
        defer { store.close() }
        try await store.save(lists[...])
        let records = items.map(\.record)
        try await saveConcurrently(store.db, records, 0..<warmUp, callers: callers)
        let before = store.container.writer.statistics
        let writtenBefore = processWriteBytes()
        let cpuBefore = processCPUMicroseconds()
        let elapsed = try await measureAsync {
            try await saveConcurrently(store.db, records, warmUp..<(warmUp + timed), callers: callers)
        }
        let processCPU = (processCPUMicroseconds() - cpuBefore) / Double(timed)
        let written = bytesWritten(since: writtenBefore, per: timed)
        let after = store.container.writer.statistics
        // Every timed save must be there (a save that silently did nothing must not count).
        let found = try store.existing(records[warmUp..<(warmUp + timed)].map(\.recordID))
        guard found == timed else { throw BenchFailure("Cumulus saves: \(found) of \(timed) records found afterwards") }
        let factor = Double(after.commits - before.commits) / Double(max(1, after.groups - before.groups))
        return (Double(timed) / elapsed, factor, written, seconds(after.cpu - before.cpu) * 1e6 / Double(timed), processCPU)
    }

    /// Saves `records[range]` one per `modify` from `callers` tasks, each taking every
    /// `callers`-th record so all stay busy to the end.
    private static func saveConcurrently(_ db: Database, _ records: [Record], _ range: Range<Int>, callers: Int)
        async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<callers {
                group.addTask {
                    var index = range.lowerBound + lane
                    while index < range.upperBound {
                        try CumulusStore.check(
                            try await db.modify(saving: [records[index]], savePolicy: .allKeys, as: actor))
                        index += callers
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// SQLite: one durable transaction per row, one connection.
    private static func sqliteSingleRowRate(
        _ lists: [EngineRow], _ items: [EngineRow], warmUp: Int, timed: Int, indexes: SQLiteRecords.Indexes = .ownerOnly
    ) throws -> (rate: Double, bytesWritten: Double?) {
        let sqlite = try SQLiteRecords("saves", indexes: indexes)
        defer { sqlite.close() }
        try sqlite.insert(lists[...], perTransaction: lists.count)
        try sqlite.insert(items[0..<warmUp], perTransaction: 1)
        let writtenBefore = processWriteBytes()
        let elapsed = try measure { try sqlite.insert(items[warmUp..<(warmUp + timed)], perTransaction: 1) }
        let written = bytesWritten(since: writtenBefore, per: timed)
        let rows = try sqlite.count()
        guard rows == lists.count + warmUp + timed else { throw BenchFailure("SQLite saves: \(rows) rows afterwards") }
        return (Double(timed) / elapsed, written)
    }
}
