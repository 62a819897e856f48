import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

extension LogSuite {
    /// A log left behind by the bulk run for the read measurement.
    struct BulkLog {
        let directory: ScratchDirectory
        /// Commits in it (record saves; the dictionary installation comes on top).
        let commits: Int
        /// The dictionary its frames use.
        let dictionary: ZstdDictionary
    }

    /// Address space reserved for bulk runs, so no run pays for map growth (which
    /// aborts and redoes a transaction); it costs no disk.
    static let bulkMapSize = 16 << 30

    /// Bulk append of every workload commit, through `AppendSession` directly (the
    /// fastest path: transactions of `bulkTransaction` commits) and through `LogWriter`
    /// fed by many concurrent submitters, against raw LMDB puts of the same bytes in
    /// transactions of the same size. Returns the directly written log for reading.
    static func bulkAppend(_ workload: Workload, _ sizes: Sizes, _ report: Report) async throws -> BulkLog {
        report.section("log: bulk append of \(workload.count) commits (durable)")
        let perTransaction = sizes.bulkTransaction
        report.note(
            "raw: mdb_put of the encoded commits, \(perTransaction) per transaction; "
                + "direct: AppendSession, \(perTransaction) commits per transaction, dictionary installed first; "
                + "writer: LogWriter, \(sizes.bulkSubmitters) concurrent submitters, default options")

        let rawDirectory = ScratchDirectory("raw-bulk")
        defer { rawDirectory.remove() }
        var rawUsed = 0
        let rawElapsed = try measure {
            let raw = try RawLMDB(path: rawDirectory.path, mapSize: bulkMapSize)
            try raw.put(workload.commitBytes, 0..<workload.count, perTransaction: perTransaction)
            rawUsed = try raw.usedBytes()
        }
        let rawRate = Double(workload.count) / rawElapsed
        rawDirectory.remove()

        // Direct: the dictionary is trained beforehand (the writer trains it in the
        // background after 1,000 commits) and installed in its own commit, untimed.
        let directory = ScratchDirectory("log-bulk-direct")
        let dictionary = try ZstdDictionary.train(
            samples: Array(workload.commitBytes.prefix(sizes.dictionarySamples)), capacity: DictionaryPolicy().capacity)
        var directUsed = 0
        do {
            let store = try openLog(directory, mapSize: bulkMapSize)
            try appendDirect(
                store,
                [CommitRequest(actor: "", requestID: "bench.dictionary", events: [.dictionaryInstalled(id: dictionary.id, bytes: dictionary.bytes)])])
            let elapsed = try measure {
                var start = 0
                while start < workload.count {
                    let end = min(workload.count, start + perTransaction)
                    try appendDirect(store, workload.requests[start..<end])
                    start = end
                }
            }
            directUsed = try store.logEnvironment.info().usedBytes + store.environment.info().usedBytes
            report.compare(
                "bulk commits/s, AppendSession direct", Figure(Double(workload.count) / elapsed, "commits/s"),
                baseline: "raw LMDB \(perTransaction) puts/txn", Figure(rawRate, "commits/s"), target: .atLeast(0.5))
        } catch {
            directory.remove()
            throw error
        }

        let writerDirectory = ScratchDirectory("log-bulk-writer")
        defer { writerDirectory.remove() }
        let store = try openLog(writerDirectory, mapSize: bulkMapSize)
        let writer = LogWriter(store: store)
        let elapsed = try await measureAsync {
            try await appendConcurrently(writer, workload.requests, 0..<workload.count, submitters: sizes.bulkSubmitters)
        }
        writer.close()
        let statistics = writer.statistics
        report.compare(
            "bulk commits/s, LogWriter", Figure(Double(workload.count) / elapsed, "commits/s"),
            baseline: "raw LMDB \(perTransaction) puts/txn", Figure(rawRate, "commits/s"), target: .atLeast(0.5))
        report.info("  commits per group (LogWriter)", Figure(Double(statistics.commits) / Double(max(1, statistics.groups)), "commits"))
        report.compare(
            "LMDB pages in use, direct log", Figure(Double(directUsed) / Double(workload.count), "B/commit"),
            baseline: "raw LMDB", Figure(Double(rawUsed) / Double(workload.count), "B/commit"))
        return BulkLog(directory: directory, commits: workload.count, dictionary: dictionary)
    }

    /// Appends `requests` in one transaction through an `AppendSession`, as tools may
    /// without a writer, and publishes the outcome.
    static func appendDirect(_ store: LogStore, _ requests: some Collection<CommitRequest>) throws {
        let now = Timestamp.now()
        let (_, outcome) = try store.appendWrite(catchUp: LogStore.withoutViews) { txn -> ((), AppendSession.Outcome) in
            var session = try store.beginAppend(in: txn)
            for request in requests { _ = try session.append(request, now: now, in: txn) }
            return ((), try session.finish(in: txn))
        }
        store.didCommit(outcome)
    }
}
