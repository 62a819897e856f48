import CumulusLog
import CumulusStorage
import Foundation

extension LogSuite {
    /// Durable commits per second with 1, 16 and 64 concurrent writers, each commit
    /// one record save through `LogWriter.append`, against raw LMDB committing one put
    /// of the same bytes per write transaction (fsync each time, like the log).
    static func durableCommits(_ workload: Workload, _ sizes: Sizes, _ report: Report) async throws {
        report.section("log: durable commits (fsync on every commit)")
        report.note(
            "log: N tasks each awaiting LogWriter.append of one ~400-byte record save; "
                + "raw: one thread, mdb_txn_begin/mdb_put/mdb_txn_commit per value, same bytes; "
                + "best of \(sizes.rounds) alternating rounds each")
        var rawRate = 0.0
        var singleRate = 0.0
        for (writers, commits) in sizes.durable {
            let timed = sizes.warmUp..<(sizes.warmUp + commits)
            var best = 0.0
            var factor = 0.0
            for _ in 0..<sizes.rounds {
                // The baseline does not depend on the writer count: measure it on the
                // single-writer count, alternating with the log so drift hits both.
                if writers == 1 {
                    rawRate = max(rawRate, try rawDurableRate(workload, timed, warmUp: sizes.warmUp))
                }
                let (rate, groupFactor) = try await logDurableRate(workload, timed, warmUp: sizes.warmUp, writers: writers)
                if rate > best {
                    best = rate
                    factor = groupFactor
                }
            }
            let label = "durable commits/s, \(writers) writer\(writers == 1 ? "" : "s")"
            if writers == 1 {
                singleRate = best
                report.compare(label, Figure(best, "commits/s"), baseline: "raw LMDB 1 put/txn", Figure(rawRate, "commits/s"), target: .atLeast(0.8))
            } else {
                report.compare(label, Figure(best, "commits/s"), baseline: "raw LMDB 1 put/txn", Figure(rawRate, "commits/s"))
                report.compare(
                    "  \(writers) writers vs 1 writer", Figure(best, "commits/s"), baseline: "log, 1 writer",
                    Figure(singleRate, "commits/s"), target: writers == 64 ? .atLeast(15) : nil)
            }
            report.info("  commits per group (fsync)", Figure(factor, "commits"))
        }
    }

    /// Raw LMDB: one durable write transaction per value.
    private static func rawDurableRate(_ workload: Workload, _ timed: Range<Int>, warmUp: Int) throws -> Double {
        let directory = ScratchDirectory("raw-durable")
        defer { directory.remove() }
        let raw = try RawLMDB(path: directory.path)
        try raw.put(workload.commitBytes, 0..<warmUp, perTransaction: 1)
        let elapsed = try measure { try raw.put(workload.commitBytes, timed, perTransaction: 1) }
        return Double(timed.count) / elapsed
    }

    /// The log: `writers` tasks appending through one `LogWriter` (group commit).
    /// Returns the rate and the mean commits per transaction.
    private static func logDurableRate(_ workload: Workload, _ timed: Range<Int>, warmUp: Int, writers: Int)
        async throws -> (Double, Double)
    {
        let directory = ScratchDirectory("log-durable-\(writers)")
        defer { directory.remove() }
        let store = try openLog(directory)
        let writer = LogWriter(store: store)
        defer { writer.close() }
        try await appendConcurrently(writer, workload.requests, 0..<warmUp, submitters: writers)
        let before = writer.statistics
        let elapsed = try await measureAsync {
            try await appendConcurrently(writer, workload.requests, timed, submitters: writers)
        }
        let after = writer.statistics
        let factor = Double(after.commits - before.commits) / Double(max(1, after.groups - before.groups))
        return (Double(timed.count) / elapsed, factor)
    }
}
