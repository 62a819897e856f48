import CumulusEngine
import CumulusModel
import Foundation
import Synchronization

/// Live notifications over HTTP (`Docs/DATA-MODEL.md`, "Subscriptions and notifications"): a Server-Sent Events stream per user,
/// resumable with `Last-Event-ID`; a long poll by notification token; and CloudKit JS's
/// push tokens with their `webcourierURL`, which answer the same notifications one at
/// a time in CloudKit's push shape.
///
/// Routes (no database segment, as `tokens/create` has none):
/// `GET  /database/1/{container}/{environment}/notifications/stream`  (text/event-stream)
/// `GET  /database/1/{container}/{environment}/notifications/poll?since=TOKEN&timeout=S`
/// `POST /database/1/{container}/{environment}/tokens/create` and `…/tokens/register`
/// `POST /device/1/{container}/{environment}/tokens/create` and `…/tokens/register`
/// `GET  /device/1/{container}/{environment}/webcourier/{ticket}`  (the `webcourierURL`)
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
        let matched = request.matched
        guard matched.isDatabasePath || matched.isDevicePath else { throw CumulusError(.invalidArguments, "no such endpoint") }
        let caller = try authenticate(
            request, container: matched.container, environment: try Self.environment(named: matched.environment))
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

    /// `tokens/create` and `tokens/register` (`register`: the client names its push
    /// token), under `/database/1/…` or CloudKit JS's `/device/1/…`: a push token and
    /// the `webcourierURL` that long-polls its notifications (`Docs/HTTP-API.md`, "Notifications for web clients"). The URL
    /// is absolute (``publicURL``) and is its own credential, valid while the web auth
    /// token it was made with signs its user in.
    func pushTokens(_ request: APIRequest, register: Bool) throws -> APIResponse {
        let matched = request.matched
        let user = try notificationUser(request)
        let containerName = matched.container
        let environment = try Self.environment(named: matched.environment)
        // The URL must die with a sign-in: a server-to-server key has none to die with.
        guard let webToken = request.query["ckWebAuthToken"], !webToken.isEmpty else {
            throw CumulusError(.notAuthenticated, "push tokens are for signed-in users: send ckWebAuthToken")
        }
        let body = try request.parsedBody()
        let apnsEnvironment = body["apnsEnvironment"]?.stringValue ?? "development"
        guard apnsEnvironment == "development" || apnsEnvironment == "production" else {
            throw CumulusError(.invalidArguments, "apnsEnvironment must be 'development' or 'production'")
        }
        let apnsToken: String
        if register {
            guard let named = body["apnsToken"]?.stringValue else {
                throw CumulusError(.invalidArguments, "tokens/register needs the apnsToken to register")
            }
            apnsToken = named
        } else {
            apnsToken = AuthStore.randomHex(32)
        }
        // The page asking may read the URL's answers later only if its API token
        // allows its origin now: the URL carries no API token of its own.
        let ticket = try container.webCourierTicket(
            user: user, container: containerName, environment: environment, apnsToken: apnsToken,
            session: AuthStore.digest(of: webToken), origin: allowedOrigin(of: request) ?? "")
        let base = publicURL ?? Self.origin(of: request)
        let url = "\(base)/device/1/\(containerName)/\(environment.name)/webcourier/\(try container.seal(ticket))"
        return APIResponse(json: [
            "apnsEnvironment": .string(apnsEnvironment), "apnsToken": .string(apnsToken), "webcourierURL": .string(url),
        ])
    }

    /// A GET of a `webcourierURL` (`/device/1/{container}/{environment}/webcourier/{ticket}`):
    /// one notification of the ticket's user in CloudKit's push shape
    /// (``pushPayload(_:)``), or JSON `null` after ``APILimits/webCourierWait`` with
    /// none. Asking again acknowledges the last answer (``Container/nextWebNotification(_:until:)``).
    ///
    /// A browser page may read the answers if it is the app the URL was made for (its
    /// origin, allowed by the API token then, is in the ticket: CORS).
    ///
    /// The URL is the credential: a damaged or forged one, or one whose sign-in ended,
    /// is `AUTHENTICATION_FAILED`, charged to the address's rate as failed credentials
    /// are. A valid one is charged to its user, and waits in one of the user's
    /// ``APILimits/longPollsPerUser`` places.
    func webCourier(_ request: APIRequest, ticket text: String) async throws -> APIResponse {
        let matched = request.matched
        let environment = try Self.environment(named: matched.environment)
        let ticket: WebCourierTicket
        do {
            ticket = try container.openWebCourierTicket(text)
            guard ticket.container == matched.container, ticket.environment == environment,
                try auth.webAuthTokenIsLive(
                    digest: ticket.session, user: ticket.user, container: ticket.container, extend: leads)
            else { throw AuthenticationFailure.badWebAuthToken }
        } catch {
            try chargeAddress(of: request)
            throw AuthenticationFailure.badWebCourierURL
        }
        if let wait = rateLimiter.takeUser(ticket.user, in: ticket.container) {
            metrics?.recordLimitHit(.userRequests)
            throw Throttled("this user sent more than \(limits.requestsPerUser) in this container", retryAfter: wait)
        }
        guard let slot = longPolls.open(for: ticket.user, perUser: limits.longPollsPerUser, inAll: .max, metrics: nil) else {
            metrics?.recordLimitHit(.longPolls)
            throw Throttled(
                "\(limits.longPollsPerUser) long polls are already waiting for this user", retryAfter: .seconds(1))
        }
        defer { withExtendedLifetime(slot) {} }
        let next = try await container.nextWebNotification(ticket, until: ContinuousClock.now + limits.webCourierWait)
        var response = APIResponse(json: next.map(pushPayload) ?? .null)
        if !ticket.origin.isEmpty, request.headers[CrossOrigin.originHeader] == ticket.origin {
            response.headers = CrossOrigin.allowing(ticket.origin)
        }
        return response
    }

    /// A notification as CloudKit pushes it, which CloudKit JS parses
    /// (`CloudKit.parseRawNotification`; `Docs/HTTP-API.md`, "Notifications for web clients"): `ck.fet` for a zone
    /// notification; `ck.qry` for a query one (`fo`: 1 created, 2 updated, 3 deleted);
    /// `ck.met` (`dbs`, `sid`) for a database one, the shape CloudKit's own pushes use,
    /// which CloudKit JS hands to listeners raw. `dbs` is the database scope (1 public,
    /// 2 private, 3 shared). A pruned notification (matching was cut short: fetch
    /// changes) is a `qry` without `rid` or `fo`, with `ck.isPruned`. `nid` is the
    /// notification's place in its user's stream. No `aps`: subscriptions here carry no
    /// notification info.
    func pushPayload(_ notification: SubscriptionNotification) -> JSONValue {
        var ck: [String: JSONValue] = [
            "nid": .string(String(notification.sequence)), "cid": .string(notification.database.container),
        ]
        var part: [String: JSONValue] = ["sid": .string(notification.subscriptionID)]
        if let zone = notification.zoneID {
            part["zid"] = .string(zone.zoneName)
            part["zoid"] = .string(zone.ownerName)
        }
        let scope = JSONValue.int(Int64(notification.database.scope.rawValue))
        switch notification.reason {
        case .recordZone:
            ck["fet"] = .object(part)
        case .database:
            part["dbs"] = scope
            ck["met"] = .object(part)
        case .recordCreated, .recordUpdated, .recordDeleted:
            part["dbs"] = scope
            part["fo"] = .int(Int64(notification.reason.rawValue))
            if let record = notification.recordID { part["rid"] = .string(record.recordName) }
            ck["qry"] = .object(part)
        case .pruned:
            part["dbs"] = scope
            ck["qry"] = .object(part)
            ck["isPruned"] = .bool(true)
        }
        return .object(["ck": .object(ck)])
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

    /// The server-sent events `route` answers with (a route whose answer is
    /// ``Route/Answer/events``): a user's notifications, or the console's live log.
    public func events(_ route: Route, _ request: APIRequest) throws -> AsyncThrowingStream<String, Error> {
        route == .consoleLogStream ? try consoleLogEvents(request) : try notificationEvents(request)
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
