import CumulusEngine
import CumulusModel
import Foundation
import Testing

extension EngineWorld {
    /// Saves subscriptions as the world's user; each must succeed.
    func subscribe(_ subscriptions: Subscription...) async throws {
        for (_, result) in try await db.saveSubscriptions(subscriptions, as: Self.user) { _ = try result.get() }
    }

    /// Every notification stored for the world's user.
    func allNotifications(for user: String = EngineWorld.user) throws -> [SubscriptionNotification] {
        try container.notifications(for: user, since: nil, limit: Container.maxNotificationsLimit).notifications
    }

    /// (subscription, reason, record name) of every stored notification, in order.
    func firings() throws -> [String] {
        try allNotifications().map { n in
            "\(n.subscriptionID) \(n.reason) \(n.recordID?.recordName ?? n.zoneID?.zoneName ?? "-")"
        }
    }
}

/// A query subscription on `type` with `filters`.
func querySubscription(
    _ id: String, _ type: String, _ filters: [QueryFilter] = [], zone: ZoneID? = nil, firesOn: FiresOn = .all,
    firesOnce: Bool = false
) -> Subscription {
    Subscription(
        subscriptionID: id,
        kind: .query(Query(recordType: type, filters: filters), zoneID: zone, firesOn: firesOn, firesOnce: firesOnce))
}

/// `field > value`.
func greater(_ field: String, _ value: Int64) -> QueryFilter {
    QueryFilter(key: .field(field), comparator: .greaterThan, value: .int64(value))
}
