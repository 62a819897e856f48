import CumulusModel

/// One user's notifications, live, read as the consumer asks for them: a page at a
/// time from the views, then each new one as its commit becomes durable.
///
/// It reads no further ahead than the page the consumer is in. A stream that pushed
/// every stored notification into an unbounded buffer let one slow or stalled client
/// make the server hold the user's whole notification history in memory (issue 15).
public actor NotificationReader {
    let container: Container
    let user: String
    let token: NotificationToken?
    /// The last notification handed on; `nil` until the token is opened.
    private var after: UInt64?
    /// The rest of the page read last, in order.
    private var pending: ArraySlice<SubscriptionNotification> = []

    /// A reader of `user`'s notifications after `token` (`nil`: from the first).
    init(container: Container, user: String, token: NotificationToken?) {
        self.container = container
        self.user = user
        self.token = token
    }

    /// What ``next(idleAfter:)`` found.
    public enum Next: Sendable {
        /// The next notification.
        case notification(SubscriptionNotification)
        /// None within the idle time.
        case idle
        /// The consuming task was cancelled.
        case finished
    }

    /// The next notification, waiting for one if none is stored yet; `nil` once the
    /// consuming task is cancelled. Throws if the token cannot be used (a token from
    /// another log or user is `changeTokenExpired`) or storage fails.
    public func next() async throws -> SubscriptionNotification? {
        while true {
            switch try await next(idleAfter: nil) {
            case .notification(let notification): return notification
            case .finished: return nil
            case .idle: continue
            }
        }
    }

    /// The next notification, or ``Next/idle`` when none comes within `idleAfter`
    /// (`nil`: wait as long as it takes): a stream over a network writes something
    /// then, so a connection its client has dropped is noticed and its place freed.
    public func next(idleAfter: Duration?) async throws -> Next {
        if after == nil {
            after = try token.map { try container.openNotificationToken($0, user: user) } ?? 0
        }
        let deadline = idleAfter.map { ContinuousClock.now + $0 }
        while !Task.isCancelled {
            if let notification = pending.popFirst() {
                after = notification.sequence
                return .notification(notification)
            }
            // Read the head before the notifications: a commit landing in between
            // then wakes the wait below at once.
            let seen = container.store.head.sequence
            let page = try container.notifications(
                for: user, since: container.notificationToken(for: user, through: after ?? 0),
                limit: Container.maxNotificationsLimit)
            if !page.notifications.isEmpty {
                pending = page.notifications[...]
                continue
            }
            if let deadline {
                guard ContinuousClock.now < deadline else { return .idle }
                await container.store.waitForCommit(after: seen, until: deadline)
            } else {
                await container.store.waitForCommit(after: seen)
            }
        }
        return .finished
    }
}
