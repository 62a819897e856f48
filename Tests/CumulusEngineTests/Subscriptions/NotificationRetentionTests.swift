import CumulusEngine
import CumulusModel
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// The `notifications` table keeps the newest `Views.notificationsKeptPerUser` of each
/// user's notifications (issue 40): a user who never reads cannot grow it without end.
@Suite("Subscriptions: notifications kept per user")
struct NotificationRetentionTests {
    @Test("past the newest notificationsKeptPerUser, each new notification drops the oldest; reading goes on without a gap")
    func oldestAreDropped() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let subscriptions = (0..<100).map { querySubscription("q\($0)", "T") }
        for (_, result) in try await world.db.saveSubscriptions(subscriptions, as: EngineWorld.user) { _ = try result.get() }
        // 100 subscriptions × 400 records: 40,000 notifications a commit, three commits.
        let total = 100 * 1_200
        for commit in 0..<3 {
            try await world.save((0..<400).map { Record.make("T", "r\(commit)-\($0)", in: zone) })
        }
        #expect(UInt64(total) > Views.notificationsKeptPerUser)
        let kept = try SubscriptionBudgetTests.everyNotification(world, for: EngineWorld.user)
        #expect(kept.count == Int(Views.notificationsKeptPerUser))
        #expect(kept.first?.sequence == UInt64(total) - Views.notificationsKeptPerUser + 1)
        #expect(kept.last?.sequence == UInt64(total))
        let head = try world.container.store.environment.read { try world.container.views.notificationHead(for: EngineWorld.user, $0) }
        #expect(head == UInt64(total))
    }
}
