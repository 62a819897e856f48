import CumulusEngine
import CumulusModel
import Foundation
import Synchronization

/// Live notifications over HTTP (SPEC §8): a Server-Sent Events stream per user,
/// resumable with `Last-Event-ID`, and the `tokens/create` long-poll URL
/// (`webcourierURL`) that answers with the same notifications.
///
/// Routes (no database segment, as `tokens/create` has none):
/// `GET  /database/1/{container}/{environment}/notifications/stream`  (text/event-stream)
/// `GET  /database/1/{container}/{environment}/notifications/poll?since=TOKEN&timeout=S`
/// `POST /database/1/{container}/{environment}/tokens/create`
extension CloudKitAPI {
    /// Longest a long-poll waits for a notification.
    public static let maxPollSeconds = 60

    /// A notification as the HTTP API writes it, with the database change token after it.
    func notificationJSON(_ notification: SubscriptionNotification) -> JSONValue {
        let reasons: [SubscriptionNotification.Reason: String] = [
            .recordCreated: "recordCreated", .recordUpdated: "recordUpdated", .recordDeleted: "recordDeleted",
            .recordZone: "recordZone", .database: "database", .pruned: "pruned",
        ]
        var dict: [String: JSONValue] = [
            "notificationID": .int(Int64(clamping: notification.sequence)),
            "subscriptionID": .string(notification.subscriptionID),
            "reason": .string(reasons[notification.reason] ?? "unknown"),
            "databaseScope": .string(notification.database.scope.description.uppercased()),
            "databaseChangeToken": .string(container.databaseChangeToken(after: notification).base64),
        ]
        if let zone = notification.zoneID { dict["zoneID"] = zone.wireJSON }
        if let record = notification.recordID { dict["recordName"] = .string(record.recordName) }
        if notification.reason == .pruned { dict["isPruned"] = .bool(true) }
        return .object(dict)
    }

    /// The signed-in user of a notification request, or the error to answer with.
    func notificationUser(_ request: APIRequest) throws -> String {
        let parts = request.path.split(separator: "/").map(String.init)
        guard parts.count >= 4 else { throw CumulusError(.invalidArguments, "no such endpoint") }
        let caller = try authenticate(request, container: parts[2], environment: try Self.environment(named: parts[3]))
        guard let user = caller.user else {
            throw CumulusError(.notAuthenticated, "sign in (ckWebAuthToken) to receive notifications")
        }
        return user
    }

    func token(_ text: String?, user: String) throws -> NotificationToken? {
        guard let text, !text.isEmpty else { return nil }
        guard let token = NotificationToken(base64: text) else {
            throw CumulusError(.changeTokenExpired, "the notification token is not one this server issued; start again without one")
        }
        return token
    }

    /// `tokens/create`: where to long-poll for this user's notifications.
    func createTokens(_ request: APIRequest) throws -> APIResponse {
        _ = try notificationUser(request)
        let base = request.path.replacingOccurrences(of: "/tokens/create", with: "")
        let body = (try? request.parsedBody()) ?? .object([:])
        return APIResponse(json: [
            "apnsEnvironment": .string(body["apnsEnvironment"]?.stringValue ?? "development"),
            "apnsToken": .string(AuthStore.randomHex(16)),
            "webcourierURL": .string("\(base)/notifications/poll"),
        ])
    }

    /// The long-poll: notifications after `since`, waiting up to `timeout` seconds for one.
    ///
    /// A user has at most ``APILimits/longPollsPerUser`` waiting; past it, `THROTTLED`.
    /// A poll whose task is cancelled (its client hung up: ``CumulusHTTPServer``)
    /// answers at once with what it has, giving its place back.
    func poll(_ request: APIRequest) async throws -> APIResponse {
        let user = try notificationUser(request)
        let since = try token(request.query["since"], user: user)
        guard let slot = longPolls.open(for: user, perUser: limits.longPollsPerUser, inAll: .max, metrics: nil) else {
            metrics?.recordLimitHit(.longPolls)
            throw Throttled(
                "\(limits.longPollsPerUser) long polls are already waiting for this user; one poll at a time sees "
                    + "every notification (or use notifications/stream)",
                retryAfter: .seconds(1))
        }
        defer { withExtendedLifetime(slot) {} }
        let timeout = min(Int(request.query["timeout"] ?? "") ?? 30, Self.maxPollSeconds)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(max(timeout, 0))
        while true {
            let seen = container.store.head.sequence
            let page = try container.notifications(for: user, since: since, limit: 200)
            if !page.notifications.isEmpty || clock.now >= deadline || Task.isCancelled {
                return APIResponse(json: [
                    "notifications": .array(page.notifications.map(notificationJSON)),
                    "token": .string(page.token.base64), "moreComing": .bool(page.moreComing),
                ])
            }
            await container.store.waitForCommit(after: seen, until: deadline)
        }
    }

    /// The SSE stream: each event's `id` is the notification token after it, so a
    /// client that reconnects with `Last-Event-ID` resumes exactly where it was.
    ///
    /// Events are made as the connection takes them (a pull, not a buffer), so a slow
    /// client holds at most one page of notifications; and a user holds at most
    /// ``APILimits/notificationStreamsPerUser`` streams, the server
    /// ``APILimits/notificationStreams``: past either, `TRY_AGAIN_LATER`. A stream
    /// ends after ``APILimits/notificationStreamLifetime``.
    public func notificationEvents(_ request: APIRequest) throws -> AsyncThrowingStream<String, Error> {
        let user = try notificationUser(request)
        let since = try token(request.headers["last-event-id"] ?? request.query["since"], user: user)
        guard let slot = notificationStreams.open(
            for: user, perUser: limits.notificationStreamsPerUser, inAll: limits.notificationStreams, metrics: metrics)
        else {
            metrics?.recordLimitHit(.notificationStreams)
            throw CumulusError(
                .serverRejectedRequest,
                "too many notification streams open (\(limits.notificationStreamsPerUser) per user, "
                    + "\(limits.notificationStreams) in all); close one or retry shortly")
        }
        let reader = container.notificationReader(for: user, since: since)
        let greeting = Mutex(true)
        let api = self
        let ends = ContinuousClock.now + limits.notificationStreamLifetime
        return AsyncThrowingStream(unfolding: {
            // The slot lives as long as this closure, which lives as long as the stream.
            _ = slot
            let first = greeting.withLock { first in
                defer { first = false }
                return first
            }
            if first { return ": cumulus notifications for \(user)\n\n" }
            let left = ends - ContinuousClock.now
            // Past its lifetime the stream ends; the client reconnects with Last-Event-ID.
            guard left > .zero else { return nil }
            let notification: SubscriptionNotification
            switch try await reader.next(idleAfter: min(api.notificationHeartbeat, left)) {
            case .notification(let next): notification = next
            // A comment line: clients ignore it, and writing it is how a dropped
            // connection is found (an idle stream otherwise writes nothing, ever).
            case .idle: return ": keep-alive\n\n"
            case .finished: return nil
            }
            let id = api.container.notificationToken(for: user, through: notification.sequence).base64
            let data = String(decoding: try api.notificationJSON(notification).serialized(), as: UTF8.self)
            return "id: \(id)\nevent: notification\ndata: \(data)\n\n"
        })
    }
}
