import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

/// The log's figures: durable commit rate, bulk append rate, bytes per commit and
/// sequential read rate, each against raw LMDB or raw zstd on the same bytes.
enum LogSuite: BenchSuite {
    static let name = "log"

    /// How much work each measurement does; `--quick` shrinks all of it.
    struct Sizes {
        /// Timed commits per durable run, by concurrent writer count.
        var durable: [(writers: Int, commits: Int)]
        /// Untimed commits before each durable run (first pages, thread start-up).
        var warmUp: Int
        /// Durable runs are repeated this often, alternating with the baseline, and the
        /// best of each kept: fsync latency on a shared machine is noisy.
        var rounds: Int
        /// Commits in the bulk append (and the log that is then read back).
        var bulk: Int
        /// Commits per transaction in the bulk append.
        var bulkTransaction: Int
        /// Concurrent submitters for the bulk append through `LogWriter`.
        var bulkSubmitters: Int
        /// Commits in the bytes-on-disk runs.
        var bytes: Int
        /// Payloads the reference dictionary is trained on.
        var dictionarySamples: Int

        static let full = Sizes(
            durable: [(1, 2_000), (16, 10_000), (64, 20_000)], warmUp: 100, rounds: 2, bulk: 1_000_000,
            bulkTransaction: 1_000, bulkSubmitters: 1_024, bytes: 20_000, dictionarySamples: 2_000)
        static let quick = Sizes(
            durable: [(1, 300), (16, 2_000), (64, 4_000)], warmUp: 50, rounds: 1, bulk: 100_000,
            bulkTransaction: 1_000, bulkSubmitters: 1_024, bytes: 5_000, dictionarySamples: 2_000)
    }

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        report.section("log: workload")
        var workload: Workload!
        let generation = try await measureAsync { workload = try await Workload.make(count: sizes.bulk) }
        report.note(
            "\(workload.count) single-record saves (SampleData to-do items), "
                + "\(Report.format(Double(workload.totalBytes) / Double(workload.count))) commit bytes each on average; "
                + "generated and encoded in \(Report.format(generation)) s, before any clock starts")

        try await durableCommits(workload, sizes, report)
        try await bytesOnDisk(workload, sizes, report)
        let log = try await bulkAppend(workload, sizes, report)
        defer { log.directory.remove() }
        try sequentialRead(log, report)
    }
}
