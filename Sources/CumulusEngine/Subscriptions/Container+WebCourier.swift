import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// The `webcourierURL` of web clients (`Docs/HTTP-API.md`, "Notifications for web
/// clients"): one long poll per GET, each
/// answering one notification of the ticket's container environment, from where its
/// push token last got to (``WebCourierPositions``).
extension Container {
    /// A ticket for `user`'s push token `apnsToken` in `container`/`environment`, made
    /// with the web auth token whose SHA-256 is `session`. It reads from the token's
    /// position on this node if it has one (a token registered again goes on where
    /// it was), else from the user's newest notification: a new token sees what
    /// happens from now on, as a device that just registered for pushes does.
    /// `origin` is the app's web origin that may read the URL's answers (empty: none).
    public func webCourierTicket(
        user: String, container: String, environment: DatabaseID.Environment, apnsToken: String, session: [UInt8],
        origin: String = ""
    ) throws -> WebCourierTicket {
        guard !apnsToken.isEmpty, apnsToken.utf8.count <= WebCourierTicket.maxTokenLength,
            apnsToken.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else {
            throw CumulusError(
                .invalidArguments,
                "apnsToken must be 1 to \(WebCourierTicket.maxTokenLength) printable ASCII characters without spaces")
        }
        var ticket = WebCourierTicket(
            user: user, container: container, environment: environment, apnsToken: apnsToken, session: session, start: 0,
            origin: origin)
        let views = self.views
        let head = try store.environment.read { try views.notificationHead(for: user, $0) }
        ticket.start = try webCourier.stored(ticket.positionKey) ?? head
        return ticket
    }

    /// `ticket` as the sealed text of its URL's last path segment.
    public func seal(_ ticket: WebCourierTicket) throws -> String {
        try ticket.sealed(secret: secret)
    }

    /// The ticket of a `webcourierURL`'s last path segment; `invalidArguments` if it
    /// is damaged, forged or another server's.
    public func openWebCourierTicket(_ text: String) throws -> WebCourierTicket {
        try WebCourierTicket.open(text, secret: secret)
    }

    /// The next notification `ticket` should see, waiting for one until `deadline`
    /// (`nil`: none came). Asking again acknowledges what the previous ask answered.
    /// Notifications of the user's other containers and environments are passed over.
    public func nextWebNotification(_ ticket: WebCourierTicket, until deadline: ContinuousClock.Instant) async throws
        -> SubscriptionNotification?
    {
        let key = ticket.positionKey
        var position = max(try webCourier.acknowledge(key) ?? ticket.start, ticket.start)
        let views = self.views
        while true {
            let seen = store.head.sequence
            let page = try store.environment.read { txn in
                try views.notifications(for: ticket.user, after: position, limit: 200, txn)
            }
            for notification in page {
                position = notification.sequence
                let database = notification.database
                if database.container == ticket.container, database.environment == ticket.environment {
                    webCourier.answered(key, through: position)
                    return notification
                }
            }
            if !page.isEmpty {
                webCourier.answered(key, through: position)
                continue
            }
            if ContinuousClock.now >= deadline || Task.isCancelled { return nil }
            await store.waitForCommit(after: seen, until: deadline)
        }
    }
}
