import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

/// Change feeds and notifications: reading a whole zone's changes from no token
/// against a raw cursor scan of the same zone's `records` view, and the latency from
/// a durable commit to its notification with many subscriptions against few, each
/// baseline measured in the same run.
enum ChangesSuite: BenchSuite {
    static let name = "changes"

    /// How much data and work; `--quick` shrinks all of it.
    struct Sizes {
        /// Records in the zone whose changes are read.
        var records: Int
        /// Timed passes of each side of the feed read, alternating; the best is kept.
        var rounds: Int
        /// Subscriptions of the many-subscription side: `buckets` × `perBucket`.
        var buckets: Int
        /// Subscriptions matching each commit (and the baseline's total).
        var perBucket: Int
        /// Timed commits per side, alternating between the two sides.
        var commits: Int
        /// Untimed commits per side before the timed ones.
        var warmUp: Int

        var subscriptions: Int { buckets * perBucket }

        static let full = Sizes(records: 100_000, rounds: 2, buckets: 1_000, perBucket: 10, commits: 500, warmUp: 20)
        static let quick = Sizes(records: 10_000, rounds: 1, buckets: 100, perBucket: 10, commits: 200, warmUp: 10)
    }

    /// Changes per page (the engine's maximum).
    static let pageSize = Database.maxChangesLimit
    /// Records or subscriptions per operation while loading.
    static let loadBatch = Limits.maxItemsPerOperation

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        report.section("changes: workload")
        report.note(
            "custom zone \(SampleData.zone.zoneName) of a private database, durable (default) container; "
                + "feed read: SampleData to-do items (~400-byte records, no references); "
                + "notifications: one small record of type T per commit, query subscriptions `bucket == k`, all owned by one user")
        if quick {
            report.note(
                "--quick: smaller N (\(Report.grouped(Int64(sizes.records))) records instead of 100,000, "
                    + "\(Report.grouped(Int64(sizes.subscriptions))) subscriptions instead of 10,000, "
                    + "\(sizes.commits) commits per side instead of 500, one round); figures are not comparable with a full run")
        }
        try await zoneFeed(sizes, report)
        try await notificationLatency(sizes, report)
        try await subscriptionCost(sizes, report)
    }

    // MARK: - Helpers

    /// The value at quantile `q` (0…1) of `values`, nearest rank; `nan` if empty.
    static func percentile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(sorted.count - 1, max(0, rank))]
    }
}
