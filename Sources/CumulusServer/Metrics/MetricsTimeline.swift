import Foundation
import Synchronization

/// The node's last minutes, for the console's charts: per ``interval``, the requests
/// answered, the errors among them (5xx), the latency's median and 99th percentile, the
/// commit groups written (commits, and the time their commit and fsync took), and each
/// follower's lag as sampled. The newest ``kept`` intervals are held, in memory only.
///
/// Percentiles come from a histogram of fixed bounds (``latencyBounds``): each is the
/// bound of the bucket the percentile falls in, an upper bound on the true value, as a
/// Prometheus `histogram_quantile` over the same buckets would say.
public final class MetricsTimeline: Sendable {
    /// The width of one point.
    public static let interval: Duration = .seconds(2)
    /// Points kept: ten minutes.
    public static let kept = 300
    /// Upper bounds of the latency histogram, in milliseconds (the last bucket is open).
    public static let latencyBounds: [Double] = [
        0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000,
    ]

    /// One interval.
    public struct Point: Sendable, Equatable {
        /// Its start, in milliseconds since 1970.
        public var start: Int64
        /// Requests answered, and those that failed on the server's side (5xx).
        public var requests = 0
        /// Requests answered with a 5xx status.
        public var errors = 0
        /// Request latency, median and 99th percentile, in milliseconds (`nil`: no request).
        public var p50: Double?
        /// The 99th percentile of request latency, in milliseconds.
        public var p99: Double?
        /// Commit groups written, and the commits in them.
        public var groups = 0
        /// Commits in those groups.
        public var commits = 0
        /// Mean and longest time a group's commit (with its fsync) took, in milliseconds.
        public var commitMean: Double?
        /// The longest time a group's commit took, in milliseconds.
        public var commitMax: Double?
        /// Each follower's lag when sampled in this interval: commits and milliseconds.
        public var followers: [String: FollowerLag] = [:]
    }

    /// A follower's lag at a sample.
    public struct FollowerLag: Sendable, Equatable {
        /// Commits behind.
        public var commits: UInt64
        /// Milliseconds behind.
        public var milliseconds: Int64
    }

    private struct Bucket {
        var point: Point
        var latencies: [Int]
        var commitTotal: Double = 0
    }

    private let buckets = Mutex<[Bucket]>([])
    private let clock: @Sendable () -> Int64

    /// A timeline; `clock` gives the time in milliseconds since 1970 (tests move it).
    public init(clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }) {
        self.clock = clock
    }

    /// Counts an answered request.
    public func request(took duration: Duration, status: Int) {
        let milliseconds = duration.seconds * 1000
        let slot = Self.latencyBounds.firstIndex { milliseconds <= $0 } ?? Self.latencyBounds.count
        update { bucket in
            bucket.point.requests += 1
            if status >= 500 { bucket.point.errors += 1 }
            bucket.latencies[slot] += 1
        }
    }

    /// Counts a committed group of `commits` whose commit took `duration`.
    public func group(commits: Int, commit duration: Duration) {
        let milliseconds = duration.seconds * 1000
        update { bucket in
            bucket.point.groups += 1
            bucket.point.commits += commits
            bucket.commitTotal += milliseconds
            bucket.point.commitMax = max(bucket.point.commitMax ?? 0, milliseconds)
        }
    }

    /// Records the followers' lag as sampled now.
    public func sample(followers: [String: FollowerLag]) {
        update { $0.point.followers = followers }
    }

    /// The points held, oldest first, with their percentiles and means worked out.
    public func points() -> [Point] {
        buckets.withLock { buckets in
            buckets.map { bucket in
                var point = bucket.point
                point.p50 = Self.percentile(0.50, of: bucket.latencies)
                point.p99 = Self.percentile(0.99, of: bucket.latencies)
                if point.groups > 0 { point.commitMean = bucket.commitTotal / Double(point.groups) }
                return point
            }
        }
    }

    /// The bound of the bucket holding the `fraction` quantile; `nil` for no samples.
    static func percentile(_ fraction: Double, of counts: [Int]) -> Double? {
        let total = counts.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = Int((Double(total) * fraction).rounded(.up))
        var seen = 0
        for (index, count) in counts.enumerated() {
            seen += count
            if seen >= max(rank, 1) {
                return index < latencyBounds.count ? latencyBounds[index] : latencyBounds[latencyBounds.count - 1]
            }
        }
        return latencyBounds.last
    }

    /// Changes the bucket of now, starting it (and dropping the oldest) when it is new.
    private func update(_ change: (inout Bucket) -> Void) {
        let millisecondsPerPoint = Self.interval.milliseconds
        let start = clock() / millisecondsPerPoint * millisecondsPerPoint
        buckets.withLock { buckets in
            if buckets.last?.point.start != start {
                buckets.append(Bucket(point: Point(start: start), latencies: Array(repeating: 0, count: Self.latencyBounds.count + 1)))
                if buckets.count > Self.kept { buckets.removeFirst(buckets.count - Self.kept) }
            }
            change(&buckets[buckets.count - 1])
        }
    }
}
