import CumulusEngine
import CumulusModel
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// What query subscriptions may cost one commit (issue 40): a user holds at most
/// `Subscription.maxPerUser`, each of at most `QueryBounds.maxSubscriptionFilters`
/// filters, and all of them together take at most `Views.matchBudgetPerCommit` filter
/// evaluations per commit; past it a subscription is told `pruned` once, never silently
/// skipped, and a rebuild derives the same notifications.
@Suite("Subscriptions: the per-commit matching budget")
struct SubscriptionBudgetTests {
    static func everyNotification(_ world: EngineWorld, for user: String) throws -> [SubscriptionNotification] {
        var all: [SubscriptionNotification] = []
        var token: NotificationToken?
        while true {
            let page = try world.container.notifications(for: user, since: token, limit: Container.maxNotificationsLimit)
            all += page.notifications
            token = page.token
            if !page.moreComing { return all }
        }
    }

    @Test("a commit past the budget matches what fits, then tells each remaining subscription pruned once")
    func budgetEndsInPruned() async throws {
        let world = try EngineWorld()
        let db = world.container.publicDatabase(container: EngineWorld.containerID)
        let filters = QueryBounds.maxSubscriptionFilters
        let count = Subscription.maxPerUser
        let subscriptions = (0..<count).map { index in
            querySubscription(
                "s\(index)", "T",
                Array(repeating: QueryFilter(key: .field("text"), comparator: .containsAnyTokens, value: .string("hello")), count: filters))
        }
        for (_, result) in try await db.saveSubscriptions(subscriptions, as: EngineWorld.user) { _ = try result.get() }
        // A 101st is refused, and so is a subscription of 17 filters.
        let extra = try await db.saveSubscriptions([querySubscription("one-more", "T")], as: EngineWorld.user)
        #expect(failure(extra[0].result)?.code == .limitExceeded)
        let wide = querySubscription(
            "wide", "T",
            Array(repeating: QueryFilter(key: .field("n"), comparator: .equals, value: .int64(1)), count: filters + 1))
        #expect(failure(try await db.saveSubscriptions([wide], as: EngineWorld.otherUser)[0].result)?.code == .limitExceeded)

        // Each record costs count × filters evaluations; the budget covers `full` of
        // them whole and `partial` subscriptions of the next.
        let perRecord = count * filters
        let full = Views.matchBudgetPerCommit / perRecord
        let partial = (Views.matchBudgetPerCommit - full * perRecord) / filters
        let records = (0..<(full + 5)).map { Record.make("T", String(format: "r%03d", $0), in: .default, ["text": .string("hello world")]) }
        let result = try await db.modify(saving: records, as: EngineWorld.otherUser)
        #expect(result.itemErrors.isEmpty)

        func check() throws {
            let notifications = try Self.everyNotification(world, for: EngineWorld.user)
            let matched = notifications.filter { $0.reason == .recordCreated }
            let pruned = notifications.filter { $0.reason == .pruned }
            #expect(matched.count == full * count + partial)
            // The first `partial` were matched against one more record before the budget
            // ran out, and left out of the records after it: every one is told, once.
            #expect(pruned.count == count, "each subscription left out is told once")
            #expect(Set(pruned.map(\.subscriptionID)).count == pruned.count)
            #expect(pruned.allSatisfy { $0.recordID == nil && $0.commitSequence == result.sequence })
        }
        try check()
        // A later commit has a budget of its own.
        _ = try await db.modify(saving: [Record.make("T", "later", in: .default, ["text": .string("hello")])], as: EngineWorld.otherUser)
        let later = try Self.everyNotification(world, for: EngineWorld.user).filter { $0.recordID?.recordName == "later" }
        #expect(later.count == count)
        // Counted in evaluations, not time: a rebuild derives the same notifications.
        let before = try world.digests()
        try world.container.rebuild()
        #expect(try world.digests() == before)
    }
}
