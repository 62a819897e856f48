import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Delivering notifications. They are written by ``Views`` in the
/// transaction of the commit that caused them, so whatever a reader sees here is
/// already durable: delivery can never get ahead of the log.
extension Container {
    /// Most notifications per page.
    public static let maxNotificationsLimit = 1_000

    /// `user`'s notifications after `token` (`nil`: from the first), at most `limit`,
    /// in order, with the token to continue from and whether more are stored.
    /// A token from another log, another user or a forgery is `changeTokenExpired`.
    public func notifications(for user: String, since token: NotificationToken? = nil, limit: Int = 100) throws
        -> (notifications: [SubscriptionNotification], token: NotificationToken, moreComing: Bool)
    {
        guard limit > 0, limit <= Self.maxNotificationsLimit else {
            throw CumulusError(.invalidArguments, "limit must be between 1 and \(Self.maxNotificationsLimit)")
        }
        let after = try token.map { try openNotificationToken($0, user: user) } ?? 0
        let views = self.views
        let (page, head) = try store.environment.read { txn in
            (try views.notifications(for: user, after: after, limit: limit, txn), try views.notificationHead(for: user, txn))
        }
        guard head >= after else {
            throw CumulusError(.changeTokenExpired, "the notification token is ahead of this server's log; fetch again without a token")
        }
        let last = page.last?.sequence ?? after
        return (page, notificationToken(for: user, through: last), last < head)
    }

    /// The token that continues `user`'s stream after notification `sequence`.
    public func notificationToken(for user: String, through sequence: UInt64) -> NotificationToken {
        NotificationToken.make(logID: store.logID, epoch: store.epoch, user: user, sequence: sequence, secret: secret)
    }

    /// The database change token after the change `notification` reports: passing it
    /// to `fetchDatabaseChanges` returns what changed after that commit.
    public func databaseChangeToken(after notification: SubscriptionNotification) -> ChangeToken {
        ChangeToken.make(
            ChangeToken.Contents(
                kind: .database, logID: store.logID, epoch: store.epoch, database: notification.database, zoneID: nil,
                incarnation: 0, position: notification.databaseSequence, offset: 0),
            secret: secret)
    }

    /// `user`'s notifications after `token`, live: the stored ones first, then each
    /// new one as its commit becomes durable, read as the consumer asks for them
    /// (``NotificationReader``). Ends when the consuming task is cancelled; throws if
    /// the token cannot be used or storage fails.
    public func notificationStream(for user: String, since token: NotificationToken? = nil)
        -> AsyncThrowingStream<SubscriptionNotification, Error>
    {
        let reader = notificationReader(for: user, since: token)
        return AsyncThrowingStream(unfolding: { try await reader.next() })
    }

    /// A reader of `user`'s notifications after `token`, for a caller that formats
    /// them as it pulls them (the server's SSE stream).
    public func notificationReader(for user: String, since token: NotificationToken? = nil) -> NotificationReader {
        NotificationReader(container: self, user: user, token: token)
    }
}
