import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

extension ChangesSuite {
    /// Latency from a durable commit (`modify` returned) to the delivery of its
    /// notifications by `notificationStream`, with `buckets × perBucket` query
    /// subscriptions of which `perBucket` match each commit, against `perBucket`
    /// subscriptions in total (all matching). The two containers are open side by
    /// side and their commits alternate, so both sides see the same machine load.
    static func notificationLatency(_ sizes: Sizes, _ report: Report) async throws {
        report.section(
            "changes: notification latency, \(Report.grouped(Int64(sizes.subscriptions))) subscriptions vs \(sizes.perBucket)")
        report.note(
            "query subscriptions on T with bucket == k (k in 0..<\(sizes.buckets), \(sizes.perBucket) per k, one owner) vs "
                + "only the \(sizes.perBucket) of k = 0; each commit saves one new T record (modify, 1 record) whose bucket "
                + "makes exactly \(sizes.perBucket) match; latency = modify returned → the consumer task iterating "
                + "notificationStream(for: owner) has received all \(sizes.perBucket) notifications of that commit (ContinuousClock); write → notified = modify called → the same")
        let many = try await LatencyRig("many", buckets: sizes.buckets, perBucket: sizes.perBucket)
        defer { many.close() }
        let few = try await LatencyRig("few", buckets: 1, perBucket: sizes.perBucket)
        defer { few.close() }
        report.note(
            "subscriptions saved, untimed: \(Report.grouped(Int64(sizes.subscriptions))) in \(Report.format(many.setup)) s "
                + "(saveSubscriptions of \(loadBatch)), \(sizes.perBucket) in \(Report.format(few.setup)) s")

        var manyLatencies: [Double] = []
        var fewLatencies: [Double] = []
        var problems: [String] = []
        var early = (many: 0, few: 0)
        for index in 0..<(sizes.warmUp + sizes.commits) {
            let bucket = (index &* 7_919) % sizes.buckets
            let manyResult = try await many.commitAndWait(index, bucket: bucket)
            let fewResult = try await few.commitAndWait(index, bucket: 0)
            problems += manyResult.problems.map { "\(Report.grouped(Int64(sizes.subscriptions))) subscriptions: \($0)" }
            problems += fewResult.problems.map { "\(sizes.perBucket) subscriptions: \($0)" }
            guard index >= sizes.warmUp else { continue }
            manyLatencies.append(manyResult.latency)
            fewLatencies.append(fewResult.latency)
            if manyResult.latency < 0 { early.many += 1 }
            if fewResult.latency < 0 { early.few += 1 }
        }
        let commits = sizes.warmUp + sizes.commits
        for (rig, label) in [(many, "\(Report.grouped(Int64(sizes.subscriptions))) subscriptions"), (few, "\(sizes.perBucket) subscriptions")] {
            let stored = try rig.storedNotifications()
            if stored != commits * sizes.perBucket {
                problems.append("\(label): \(stored) notifications stored for \(commits) commits, expected \(commits * sizes.perBucket)")
            }
        }
        report.note(
            "\(sizes.commits) timed commits per side after \(sizes.warmUp) untimed, alternating; "
                + "notifications delivered before modify returned (counted as 0): "
                + "\(early.many) with \(Report.grouped(Int64(sizes.subscriptions))), \(early.few) with \(sizes.perBucket)")
        for problem in problems.prefix(10) { report.note("WRONG NOTIFICATIONS: \(problem)") }
        if problems.count > 10 { report.note("WRONG NOTIFICATIONS: … \(problems.count - 10) more") }
        let wrong = !problems.isEmpty
        let label = "\(Report.grouped(Int64(sizes.subscriptions))) subs"
        let base = "\(sizes.perBucket) subscriptions"
        // Delivered before the writer's caller resumed counts as no delay (0), not as
        // a negative one: the notification was there when the commit was known durable.
        let manyDelay = manyLatencies.map { max(0, $0) }
        let fewDelay = fewLatencies.map { max(0, $0) }
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            let manyValue = percentile(manyDelay, q) * 1_000
            let fewValue = percentile(fewDelay, q) * 1_000
            // A wrong delivery makes the figure meaningless: count it as missed.
            report.compare(
                "durable → notified \(name), \(label)", Figure(wrong ? .infinity : manyValue, "ms"),
                baseline: base, Figure(fewValue, "ms"), target: .atMost(2))
        }
        report.detail(
            "  mean / max, \(label)",
            "\(Report.format(mean(manyDelay) * 1_000)) / \(Report.format((manyDelay.max() ?? .nan) * 1_000)) ms")
        report.detail(
            "  mean / max, \(base)",
            "\(Report.format(mean(fewDelay) * 1_000)) / \(Report.format((fewDelay.max() ?? .nan) * 1_000)) ms")
        // The matching happens inside the commit's transaction, before it is durable,
        // so its cost is in the commit time and in write → notified, not above.
        let manyCommits = Array(many.commitTimes.suffix(sizes.commits))
        let fewCommits = Array(few.commitTimes.suffix(sizes.commits))
        let manyTotal = zip(manyCommits, manyLatencies).map { $0 + $1 }
        let fewTotal = zip(fewCommits, fewLatencies).map { $0 + $1 }
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            report.compareWithoutTarget(
                "  modify (durable) \(name), \(label)", Figure(percentile(manyCommits, q) * 1_000, "ms"), baseline: base,
                Figure(percentile(fewCommits, q) * 1_000, "ms"))
        }
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            report.compareWithoutTarget(
                "  write → notified \(name), \(label)", Figure(percentile(manyTotal, q) * 1_000, "ms"),
                baseline: base, Figure(percentile(fewTotal, q) * 1_000, "ms"))
        }
    }

    static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
    }
}

/// A container with `buckets × perBucket` query subscriptions and a consumer task
/// reading its owner's notification stream, reporting when each commit's
/// notifications have all arrived.
final class LatencyRig {
    /// What the consumer saw of one commit.
    struct Arrival: Sendable {
        var commit: UInt64
        var at: ContinuousClock.Instant
        var subscriptionIDs: Set<String>
        var duplicates: Int
        var error: String?
    }

    let store: CumulusStore
    let perBucket: Int
    /// Seconds the subscriptions took to save (untimed in the figures).
    let setup: Double
    /// Seconds each `modify` took, in order.
    private(set) var commitTimes: [Double] = []
    private var arrivals: AsyncStream<Arrival>.Iterator
    private let consumer: Task<Void, Never>
    private let clock = ContinuousClock()

    static let recordType = "T"
    static var user: String { EngineSuite.actor }

    static func subscriptionID(bucket: Int, _ index: Int) -> String { "s-\(bucket)-\(index)" }

    init(_ label: String, buckets: Int, perBucket: Int) async throws {
        store = try await CumulusStore("changes-\(label)")
        self.perBucket = perBucket
        let db = store.db
        var subscriptions: [Subscription] = []
        for bucket in 0..<buckets {
            for index in 0..<perBucket {
                let query = Query(
                    recordType: Self.recordType,
                    filters: [QueryFilter(key: .field("bucket"), comparator: .equals, value: .int64(Int64(bucket)))])
                subscriptions.append(
                    Subscription(
                        subscriptionID: Self.subscriptionID(bucket: bucket, index),
                        kind: .query(query, zoneID: SampleData.zone, firesOn: .all, firesOnce: false)))
            }
        }
        setup = try await measureAsync {
            var start = 0
            while start < subscriptions.count {
                let end = min(subscriptions.count, start + ChangesSuite.loadBatch)
                // One owner holds them all, far past a user's cap (which bounds what one
                // user may cost others): this measures matching, not the cap.
                for (id, result) in try await db.saveSubscriptions(
                    Array(subscriptions[start..<end]), maxPerUser: .max, as: Self.user)
                {
                    guard case .success = result else { throw BenchFailure("saving subscription \(id): \(result)") }
                }
                start = end
            }
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Arrival.self)
        arrivals = stream.makeAsyncIterator()
        let notifications = store.container.notificationStream(for: Self.user, since: nil)
        consumer = Task {
            let clock = ContinuousClock()
            var pending: [UInt64: Set<String>] = [:]
            var duplicates = 0
            do {
                for try await notification in notifications {
                    let now = clock.now
                    var ids = pending[notification.commitSequence, default: []]
                    if !ids.insert(notification.subscriptionID).inserted { duplicates += 1 }
                    if ids.count >= perBucket {
                        pending[notification.commitSequence] = nil
                        continuation.yield(
                            Arrival(commit: notification.commitSequence, at: now, subscriptionIDs: ids, duplicates: duplicates))
                        duplicates = 0
                    } else {
                        pending[notification.commitSequence] = ids
                    }
                }
            } catch {
                continuation.yield(Arrival(commit: 0, at: clock.now, subscriptionIDs: [], duplicates: 0, error: "\(error)"))
            }
            continuation.finish()
        }
    }

    /// Saves record `index` with `bucket` and waits until the consumer has all its
    /// notifications; the latency (seconds from `modify` returning to the last
    /// notification's arrival) and anything wrong with what arrived.
    func commitAndWait(_ index: Int, bucket: Int) async throws -> (latency: Double, problems: [String]) {
        var record = Record(recordType: Self.recordType, recordID: RecordID(recordName: "n-\(index)", zoneID: SampleData.zone))
        record["bucket"] = .int64(Int64(bucket))
        record["note"] = .string("commit \(index) for bucket \(bucket)")
        // Ends the consumer (so `next()` returns) if the notifications never come.
        let consumer = self.consumer
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            consumer.cancel()
        }
        defer { watchdog.cancel() }
        let start = clock.now
        let result = try await store.db.modify(saving: [record], savePolicy: .allKeys, as: Self.user)
        let done = clock.now
        commitTimes.append(seconds(done - start))
        try CumulusStore.check(result)
        guard let sequence = result.sequence else { throw BenchFailure("modify of n-\(index) made no commit") }
        guard let arrival = await arrivals.next() else {
            throw BenchFailure("no notifications for commit \(sequence) (n-\(index)) within 60 s")
        }
        if let error = arrival.error { throw BenchFailure("notification stream failed: \(error)") }
        var problems: [String] = []
        if arrival.commit != sequence {
            problems.append("commit \(sequence) (n-\(index)) awaited, notifications of commit \(arrival.commit) arrived")
        }
        let expected = Set((0..<perBucket).map { Self.subscriptionID(bucket: bucket, $0) })
        if arrival.subscriptionIDs != expected {
            let wrong = arrival.subscriptionIDs.subtracting(expected).sorted().prefix(3)
            problems.append(
                "commit \(arrival.commit): fired \(arrival.subscriptionIDs.count) subscriptions, not the \(perBucket) of bucket \(bucket) "
                    + "(unexpected e.g. \(wrong.joined(separator: ", ")))")
        }
        if arrival.duplicates > 0 { problems.append("commit \(arrival.commit): \(arrival.duplicates) duplicate notifications") }
        return (seconds(arrival.at - done), problems)
    }

    /// How many notifications the owner has stored in all.
    func storedNotifications() throws -> Int {
        var token: NotificationToken?
        var count = 0
        while true {
            let page = try store.container.notifications(for: Self.user, since: token, limit: Container.maxNotificationsLimit)
            count += page.notifications.count
            token = page.token
            if !page.moreComing { return count }
        }
    }

    func close() {
        consumer.cancel()
        store.close()
    }
}
