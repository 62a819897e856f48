import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

extension ChangesSuite {
    /// What one user's query subscriptions cost another user's save (issue 40, item 7):
    /// user A holds as many query subscriptions as a user may (``Subscription/maxPerUser``),
    /// each with as many token filters as one may have, on the type A saves; A saves a
    /// ~150 KB record and user B's one-record save is queued right behind it in the
    /// single writer. B's latency is the figure, beside the same two saves in a container
    /// where A holds no subscriptions. Before the caps and one tokenization per record,
    /// 200 such subscriptions of 20 filters held the writer 6–7 s (B's save waited as
    /// long; 13 ms without them).
    static func subscriptionCost(_ sizes: Sizes, _ report: Report) async throws {
        let subscriptions = Subscription.maxPerUser
        let filters = QueryBounds.maxSubscriptionFilters
        let rounds = sizes.commits / 10
        report.section("changes: another user's save behind \(subscriptions) query subscriptions of \(filters) token filters")
        report.note(
            "public database; A holds \(subscriptions) query subscriptions on Doc, each \(filters) CONTAINS_ANY_TOKENS filters "
                + "on `text` (none match); per round A saves one Doc with ~150 KB of words and B's one small Note is "
                + "submitted right after it; latency = B's modify called → returned (ContinuousClock); the baseline is "
                + "the same saves in a container where A holds no subscriptions; \(rounds) rounds per side, alternating")
        let subscribed = try await CostRig("subscribed", subscriptions: subscriptions, filters: filters)
        defer { subscribed.close() }
        let bare = try await CostRig("bare", subscriptions: 0, filters: filters)
        defer { bare.close() }
        var withSubscriptions: (b: [Double], a: [Double]) = ([], [])
        var without: (b: [Double], a: [Double]) = ([], [])
        for round in 0..<(rounds + 2) {
            let measured = try await subscribed.round(round)
            let baseline = try await bare.round(round)
            guard round >= 2 else { continue }  // warm-up
            withSubscriptions.b.append(measured.b)
            withSubscriptions.a.append(measured.a)
            without.b.append(baseline.b)
            without.a.append(baseline.a)
        }
        let notified = try subscribed.notifications()
        if notified != 0 { report.note("WRONG NOTIFICATIONS: \(notified) fired; no filter matches") }
        let label = "\(subscriptions) subs × \(filters) filters"
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            report.compare(
                "B's save behind A's, \(name), \(label)",
                Figure(notified != 0 ? .infinity : percentile(withSubscriptions.b, q) * 1_000, "ms"),
                baseline: "no subscriptions", Figure(percentile(without.b, q) * 1_000, "ms"), target: .atMost(2))
        }
        report.compareWithoutTarget(
            "A's 150 KB save, p50, \(label)", Figure(percentile(withSubscriptions.a, 0.5) * 1_000, "ms"),
            baseline: "no subscriptions", Figure(percentile(without.a, 0.5) * 1_000, "ms"))
    }
}

/// A container whose public database holds user A's query subscriptions (possibly none).
final class CostRig {
    let store: CumulusStore
    let db: Database
    static let userA = "_a0000000000000000000000000000001"
    static let userB = "_b0000000000000000000000000000002"
    /// About 150 KB of words none of the filters ask for.
    static let text: String = {
        var random = SystemRandomNumberGenerator()
        var words: [String] = []
        var bytes = 0
        while bytes < 150_000 {
            let word = "x" + String(UInt32.random(in: 0...UInt32.max, using: &random), radix: 36)
            words.append(word)
            bytes += word.utf8.count + 1
        }
        return words.joined(separator: " ")
    }()

    init(_ label: String, subscriptions: Int, filters: Int) async throws {
        store = try await CumulusStore("cost-\(label)")
        db = store.container.publicDatabase(container: SampleData.database.container)
        let all = (0..<subscriptions).map { index in
            let query = Query(
                recordType: "Doc",
                filters: (0..<filters).map { filter in
                    QueryFilter(key: .field("text"), comparator: .containsAnyTokens, value: .string("absent\(index)w\(filter) zz\(filter)"))
                })
            return Subscription(
                subscriptionID: "s\(index)", kind: .query(query, zoneID: nil, firesOn: .all, firesOnce: false))
        }
        let results = try await db.saveSubscriptions(all, as: Self.userA)
        let refused = results.compactMap { item -> String? in
            guard case .failure(let error) = item.result else { return nil }
            return "\(item.subscriptionID): \(error)"
        }
        if let first = refused.first { throw BenchFailure("saving subscription \(first)") }
    }

    /// One round: A's large save, then B's small one queued behind it; each one's seconds.
    func round(_ index: Int) async throws -> (a: Double, b: Double) {
        let clock = ContinuousClock()
        let big = Record(
            recordType: "Doc", recordID: RecordID(recordName: "doc-\(index)"), fields: ["text": .string(Self.text)])
        let small = Record(recordType: "Note", recordID: RecordID(recordName: "note-\(index)"), fields: ["n": .int64(Int64(index))])
        let db = self.db
        let aStart = clock.now
        let userA = Self.userA
        let a = Task { @Sendable [db, big, userA] () async throws -> ModifyResult in
            try await db.modify(saving: [big], savePolicy: .allKeys, as: userA)
        }
        // Give A's save the writer first, as a real second client arrives just after it.
        await Task.yield()
        let bStart = clock.now
        let bResult = try await db.modify(saving: [small], savePolicy: .allKeys, as: Self.userB)
        let bSeconds = seconds(clock.now - bStart)
        let aResult = try await a.value
        let aSeconds = seconds(clock.now - aStart)
        try CumulusStore.check(aResult)
        try CumulusStore.check(bResult)
        return (aSeconds, bSeconds)
    }

    /// Notifications A has received (none should fire: no filter matches).
    func notifications() throws -> Int {
        try store.container.notifications(for: Self.userA, since: nil, limit: Container.maxNotificationsLimit).notifications.count
    }

    func close() { store.close() }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
