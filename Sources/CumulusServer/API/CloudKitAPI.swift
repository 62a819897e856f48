import CumulusEngine
import CumulusModel
import CumulusReplication
import CumulusStorage
import Crypto
import Foundation
import Logging

/// CloudKit Web Services on top of a ``Container`` (`Docs/HTTP-API.md`): routing,
/// authentication, JSON in and out, and the mapping of errors to CloudKit's codes.
///
/// Plain request → response logic with no HTTP server in it, so every route is
/// tested in process; ``CumulusHTTPServer`` only carries bytes to and from it.
public struct CloudKitAPI: Sendable {
    /// The data directory served (for the console's "as of", a past state of it:
    /// ``reading(_:)``).
    public internal(set) var container: Container
    /// The node's role (leader, follower of a URL, …), from `serve`; `nil` for an API
    /// made without a node (tests, benchmarks), which leads while its container does.
    public let node: NodeState?
    /// Whether this node leads and was not superseded: only a leader moves a session's
    /// expiry on, signs users in, and holds every commit it made.
    var leads: Bool { node?.leads ?? (container.leads && container.supersededBy == nil) }
    /// The console's signed-in browsers, on a node that serves the console (`nil`: it
    /// does not; its paths answer 404).
    public var consoleSessions: ConsoleSessions?
    /// The past states the console's "as of" reads (``ConsoleTimeTravel``); set with the console.
    public var consoleTimeTravel: ConsoleTimeTravel?
    /// The console's long work (``ConsoleJobs``); set with the console.
    public var consoleJobs: ConsoleJobs?
    /// Credentials.
    public let auth: AuthStore
    /// Largest request body accepted.
    public static let maxBodyBytes = 4 << 20
    /// What one request may ask for (`serve`'s options). Setting them starts the rate
    /// limits afresh at their new rates.
    public var limits = APILimits() {
        didSet {
            rateLimiter = RateLimiter(limits)
            signInGuard = SignInGuard(limits)
        }
    }
    /// The request rate limits' buckets, at ``limits``' rates.
    var rateLimiter = RateLimiter(APILimits())
    /// The sign-in page's attempt limits, at ``limits``' rates.
    var signInGuard = SignInGuard(APILimits())
    /// Refuses a list of more than ``APILimits/itemsPerRequest`` items (every route
    /// that takes one) before any is read.
    func checkItemCount(_ count: Int, of what: String) throws {
        guard count <= limits.itemsPerRequest else {
            metrics?.recordLimitHit(.itemsPerRequest)
            throw CumulusError(.limitExceeded, "\(count) \(what); the limit is \(limits.itemsPerRequest) per request")
        }
    }

    /// Where requests are counted, if anywhere.
    public let metrics: ServerMetrics?
    /// Where each request is logged (one line, with its request ID), if anywhere.
    public let logger: Logger?
    /// The `/replication/*` endpoints, on a node started with a replication secret.
    public var replication: ReplicationEndpoints?
    /// The open SSE notification streams, per user and in all.
    let notificationStreams = UserSlots()
    /// The long polls waiting, per user.
    let longPolls = UserSlots()
    /// How long an SSE stream stays silent before it writes a keep-alive comment.
    public var notificationHeartbeat: Duration = .seconds(15)
    /// The base URL clients reach this server at (`serve --public-url`, such as
    /// `https://cloud.example.com`), for the absolute URLs it hands out: asset URLs, a
    /// `webcourierURL`, the sign-in page. Only without one (an API made in process, a
    /// node on every address with no `--public-url`, which `serve` warns of) are they
    /// built from a request's `Host`, which its sender chooses.
    public var publicURL: String?
    /// Answers of record reads kept and handed back instead of the engine's: the
    /// ceiling the read benchmarks compare with (``ReadCeiling``). `nil`, always, in
    /// service.
    public var readCeiling: ReadCeiling?
    /// Server-to-server signatures already received, within their window.
    let signatureReplays = SignatureReplayCache()
    /// SHA-256 of the token that opens `/metrics` and `/healthz`'s detail, if one is set.
    let metricsTokenDigest: [UInt8]?
    /// Where `serve` reads the metrics token: what `/metrics` and `/healthz` show
    /// (the log head, the epoch, followers' names and lag) is for operators, not for
    /// whoever can reach the port.
    public static let metricsTokenSource = SecretSource(
        name: "the metrics token", fileOption: "--metrics-token-file", environmentVariable: "CUMULUS_METRICS_TOKEN")
    /// The longest a read-your-writes request waits for its sequence (`Docs/HTTP-API.md`, "Replication and read-your-writes").
    public static let maxCatchUpWait: Duration = .seconds(30)
    /// How long it waits when the client does not say.
    public static let defaultCatchUpWait: Duration = .seconds(5)

    /// An API over `container`, authenticating with `auth`, counting into `metrics`,
    /// logging to `logger`. `metricsToken`, when given, opens `/metrics` and the detail
    /// of `/healthz` to requests that send it as `Authorization: Bearer TOKEN`; without
    /// it `/metrics` is not served and `/healthz` answers liveness alone.
    public init(
        container: Container, auth: AuthStore, metrics: ServerMetrics? = nil, logger: Logger? = nil,
        replication: ReplicationEndpoints? = nil, metricsToken: String? = nil, node: NodeState? = nil
    ) {
        self.node = node ?? replication?.node
        self.replication = replication
        metricsTokenDigest = metricsToken.map { Array(SHA256.hash(data: Array($0.utf8))) }
        self.container = container
        self.auth = auth
        self.metrics = metrics
        self.logger = logger
    }

    /// Who is calling, once authenticated.
    struct Caller {
        var container: String
        var user: String?
        /// Signed server-to-server: the public database only.
        var serverToServer = false
    }

    /// Everything a route handler needs.
    struct Context {
        var caller: Caller
        var database: Database
        /// The request's body, read in place: a route builds ``JSONValue``s only of
        /// the parts a wire decoder takes so.
        var body: JSONDocument.Node
        var numbersAsStrings: Bool
        /// Becomes the commit's request ID.
        var requestID: String
        /// How long a change token ahead of this node may be waited for (a follower
        /// catching up with the leader that issued it).
        var catchUpWait: Duration = CloudKitAPI.defaultCatchUpWait
        /// `scheme://host` of the URLs handed out (assets), from the request.
        var origin = "http://localhost"
    }

    /// Answers one request. Never throws: every failure becomes a CloudKit error body.
    public func handle(_ request: APIRequest) async -> APIResponse {
        // One ID per request: it is the commit's request ID (so the log and audit
        // exports can be matched with server logs) and the `uuid` of any error.
        let requestID = request.headers["x-request-id"].flatMap { $0.isEmpty || $0.count > 128 ? nil : $0 }
            ?? UUID.random().uuidString
        let started = ContinuousClock.now
        let matched = request.matched
        var response: APIResponse
        do {
            response =
                request.method == "OPTIONS" ? try preflight(request) : try await route(request, matched, requestID: requestID)
        } catch {
            response = Self.errorResponse(error)
        }
        response = namingLeader(response)
        // What this node holds as the answer leaves: a client passes it to a
        // follower as X-Cumulus-Min-Sequence (with X-Cumulus-Min-Epoch) to read its own
        // writes there. The epoch goes with it: after a failover, a sequence from a
        // superseded leader can name a commit that was never replicated.
        response.headers["x-cumulus-sequence"] = String(container.store.head.sequence)
        response.headers["x-cumulus-epoch"] = String(container.store.epoch)
        // Errors too: a page must be able to read a 421 to sign its user in.
        response.headers.merge(crossOriginHeaders(for: request)) { _, crossOrigin in crossOrigin }
        if case .object(var body) = response.json, body["uuid"] != nil {
            body["uuid"] = .string(requestID)
            response.json = .object(body)
        }
        let route = matched.route.map { matched.viaConsole ? "console/" + $0.label : $0.label } ?? Route.unmatchedLabel
        let elapsed = ContinuousClock.now - started
        metrics?.recordRequest(route: route, status: response.status, took: elapsed)
        if let logger {
            logger.info(
                "\(request.method) \(route) \(response.status)",
                metadata: [
                    "request": .string(requestID),
                    "ms": .string(String(format: "%.1f", elapsed.seconds * 1000)),
                    "code": .string(response.json["serverErrorCode"]?.stringValue ?? "-"),
                ])
        }
        return response
    }

    /// `answer()`, or with a ``readCeiling`` set (benchmarks only), the answer it kept.
    func kept(_ route: String, _ request: APIRequest, _ context: Context, _ answer: () async throws -> APIResponse)
        async throws -> APIResponse
    {
        guard let readCeiling else { return try await answer() }
        return try await readCeiling.answer(route, caller: context.caller.user, body: request.body, answer)
    }

    /// `response` with `leaderURL` added when it is `NOT_LEADER` and this node knows
    /// its leader.
    func namingLeader(_ response: APIResponse) -> APIResponse {
        guard response.json["serverErrorCode"]?.stringValue == ServerErrorCode.notLeader.name,
            case .object(var body) = response.json, let leaderURL = node?.role.leaderURL
        else { return response }
        var response = response
        body["leaderURL"] = .string(leaderURL)
        response.json = .object(body)
        return response
    }

    /// Read-your-writes on a follower (`Docs/HTTP-API.md`, "Replication and read-your-writes"): a request carrying
    /// `X-Cumulus-Min-Sequence` (or `?minSequence=`) — the `X-Cumulus-Sequence` the
    /// leader answered a write with — waits until this node holds that commit, for
    /// `X-Cumulus-Max-Wait-Ms` (default 5 s, at most 30 s), then fails as retryable.
    /// With `X-Cumulus-Min-Epoch` (or `?minEpoch=`; the answer's `X-Cumulus-Epoch`), a
    /// commit of a superseded leader that was never replicated is `changeTokenExpired`
    /// at once instead of being waited for (``Container/checkRequestedSequence(_:epoch:)``).
    func waitForRequestedSequence(_ request: APIRequest) async throws {
        guard let text = request.headers["x-cumulus-min-sequence"] ?? request.query["minSequence"] else { return }
        guard let wanted = UInt64(text) else {
            throw CumulusError(.invalidArguments, "X-Cumulus-Min-Sequence must be a sequence number, not '\(text.prefix(40))'")
        }
        var epoch: UInt64?
        if let epochText = request.headers["x-cumulus-min-epoch"] ?? request.query["minEpoch"] {
            guard let number = UInt64(epochText) else {
                throw CumulusError(.invalidArguments, "X-Cumulus-Min-Epoch must be an epoch number, not '\(epochText.prefix(40))'")
            }
            epoch = number
            try container.checkRequestedSequence(wanted, epoch: number)
        }
        let wait = try Self.catchUpWait(request)
        let store = container.store
        // A leader already holds every commit it made: waiting could not help.
        if leads && wanted > store.head.sequence {
            throw CumulusError(
                .serverRejectedRequest,
                "this leader's log ends at \(store.head.sequence); commit \(wanted) was never made here (is the sequence from another cluster?)")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        while store.head.sequence < wanted {
            guard clock.now < deadline else {
                throw CumulusError(
                    .serverRejectedRequest,
                    "this node holds commits up to \(store.head.sequence), not yet \(wanted); retry shortly or ask the leader")
            }
            await store.waitForCommit(after: store.head.sequence, until: deadline)
        }
        // A follower may have learned only while it waited where the epoch ended.
        if let epoch { try container.checkRequestedSequence(wanted, epoch: epoch) }
    }

    /// `X-Cumulus-Max-Wait-Ms`, capped, or the default.
    static func catchUpWait(_ request: APIRequest) throws -> Duration {
        guard let text = request.headers["x-cumulus-max-wait-ms"] else { return defaultCatchUpWait }
        guard let ms = Int64(text), ms >= 0 else {
            throw CumulusError(.invalidArguments, "X-Cumulus-Max-Wait-Ms must be a number of milliseconds")
        }
        return min(.milliseconds(ms), maxCatchUpWait)
    }

    /// The environment a path names (`BAD_REQUEST` for another word).
    static func environment(named name: String) throws -> DatabaseID.Environment {
        guard let environment = DatabaseID.Environment(name: name) else {
            throw CumulusError(.invalidArguments, "environment must be 'development' or 'production', not '\(name)'")
        }
        return environment
    }

    /// Whether `request` carries the metrics token (`Authorization: Bearer TOKEN`),
    /// compared in constant time; always false when none is set.
    func presentsMetricsToken(_ request: APIRequest) -> Bool {
        guard let metricsTokenDigest, let header = request.headers["authorization"], header.hasPrefix("Bearer ") else {
            return false
        }
        let presented = Array(SHA256.hash(data: Array(header.dropFirst("Bearer ".count).utf8)))
        return ConstantTime.equal(presented, metricsTokenDigest)
    }

    /// The CloudKit error body for a failure.
    public static func errorResponse(_ error: any Error) -> APIResponse {
        do {
            throw error
        } catch let error as CumulusError {
            return .error(ServerErrorCode(error), error.message)
        } catch let throttled as Throttled {
            return .error(.throttled, throttled.reason, retryAfter: throttled.retryAfter)
        } catch let refusal as ConsoleRefusal {
            // A console answer wherever it is made (the live log's refusal comes through
            // the HTTP layer's event streams).
            var response = APIResponse.error(refusal.code, refusal.reason, retryAfter: refusal.retryAfter)
            response.headers = consoleHeaders
            return response
        } catch let failure as AuthenticationFailure {
            switch failure {
            case .badAPIToken:
                return .error(.authenticationFailed, "the ckAPIToken is not valid for this container and environment (a token opens the one it was minted for); mint a new one")
            case .badWebAuthToken:
                return .error(.authenticationFailed, "the ckWebAuthToken is not valid; sign in again")
            case .badSignature(let why):
                return .error(.authenticationFailed, "the request signature is not valid: \(why)")
            case .badWebCourierURL:
                return .error(
                    .authenticationFailed,
                    "this webcourier URL does not open: its sign-in ended, or it is damaged; sign in and ask tokens/create again")
            }
        } catch {
            return .error(.internalError, "internal error: \(error)")
        }
    }

    /// Serves `request`, whose path `matched` read (``Route/match(_:)``): the node's
    /// probes, sign-in and the device module need no database; everything under
    /// `/database/1/` is authenticated first, then dispatched on its route.
    private func route(_ request: APIRequest, _ matched: Route.Match, requestID: String) async throws -> APIResponse {
        let route = matched.route(taking: request.method)
        switch route {
        case .healthz:
            // Liveness for anyone (a load balancer's probe); the detail for operators.
            guard presentsMetricsToken(request) else { return APIResponse(json: ["status": "ok"]) }
            return APIResponse(json: [
                "status": "ok", "logHead": .int(Int64(clamping: container.store.head.sequence)),
                "role": .string(node?.reportedRole ?? (container.supersededBy == nil ? "leader" : "superseded")),
                "epoch": .int(Int64(clamping: container.store.epoch)),
            ])
        case .metrics:
            guard metricsTokenDigest != nil else {
                return .error(
                    .notFound,
                    "/metrics is served only by a node started with \(Self.metricsTokenSource.fileOption) or "
                        + "\(Self.metricsTokenSource.environmentVariable); the scraper sends Authorization: Bearer TOKEN")
            }
            guard presentsMetricsToken(request) else {
                return .error(.authenticationFailed, "/metrics needs the metrics token: Authorization: Bearer TOKEN")
            }
            var response = APIResponse(json: .null)
            response.text = (metrics?.render(container) ?? "") + (replication?.status().prometheusText() ?? "")
            return response
        // Browser sign-in: the page a 421's redirectURL opens, and sign-out.
        case .signIn: return request.method == "GET" ? signInForm(request) : await signIn(request)
        case .signOut: return try signOut(request)
        case let route? where route.isConsole:
            return try await console(request, route: route, requestID: requestID)
        default: break
        }
        if matched.viaConsole { return try await consoleDatabase(request, matched, requestID: requestID) }
        // CloudKit JS's device module: push tokens and the webcourierURL.
        if matched.isDevicePath {
            switch route {
            case .deviceTokensCreate: return try pushTokens(request, register: false)
            case .deviceTokensRegister: return try pushTokens(request, register: true)
            case .webCourier: return try await webCourier(request, ticket: matched.ticket)
            default: return .error(.notFound, "no such endpoint: \(request.path)")
            }
        }
        // /database/1/{container}/{environment}/{database}/{op…}; tokens/* has no database segment.
        guard matched.isDatabasePath else {
            return .error(.notFound, "no such endpoint: \(request.path); paths look like /database/1/{container}/{environment}/{database}/records/modify")
        }
        let containerName = matched.container
        let environment = try Self.environment(named: matched.environment)
        switch route {
        case .tokensCreate: return try pushTokens(request, register: false)
        case .tokensRegister: return try pushTokens(request, register: true)
        case .notificationsPoll: return try await poll(request)
        default: break
        }
        try checkBodySize(request)
        let caller = try authenticate(request, container: containerName, environment: environment)
        return try await serveDatabase(request, matched, route: route, caller: caller, requestID: requestID)
    }

    /// Refuses, with `limitExceeded`, a body larger than a database route reads.
    func checkBodySize(_ request: APIRequest) throws {
        guard request.body.count <= Self.maxBodyBytes else {
            metrics?.recordLimitHit(.bodyBytes)
            throw CumulusError(.limitExceeded, "request body of \(request.body.count) bytes; the limit is \(Self.maxBodyBytes)")
        }
    }

    /// Serves a database route (`/database/1/{container}/{environment}/{database}/{op}`)
    /// for `caller`, who has been authenticated and charged: by CloudKit's credentials,
    /// or by the console's session (``Route/Match/viaConsole``).
    func serveDatabase(
        _ request: APIRequest, _ matched: Route.Match, route: Route?, caller: Caller, requestID: String
    ) async throws -> APIResponse {
        let containerName = matched.container
        let environment = try Self.environment(named: matched.environment)
        // Only authenticated callers may hold a request open waiting for a sequence.
        try await waitForRequestedSequence(request)
        guard let scope = DatabaseScope(name: matched.database) else {
            return .error(.badRequest, "database must be 'public', 'private' or 'shared', not '\(matched.database)'")
        }
        let operation = matched.afterDatabase
        let body = try request.parsedBody()
        guard body.isObject else { return .error(.badRequest, "the request body must be a JSON object") }
        if caller.serverToServer && scope != .public {
            return .error(.accessDenied, "server-to-server keys open the public database only")
        }
        let owner: String
        switch scope {
        case .public: owner = ""
        case .private, .shared:
            guard let user = caller.user else {
                return .error(
                    .authenticationRequired, "sign in (ckWebAuthToken) to use the \(scope) database",
                    redirectURL: signInURL(request, container: containerName, environment: environment))
            }
            owner = user
        }
        let database = container.database(
            DatabaseID(container: containerName, environment: environment, scope: scope, owner: owner))
        let numbersAsStrings = body["numbersAsStrings"]?.boolValue ?? body["numberAsStrings"]?.boolValue
            ?? (request.query["numbersAsStrings"] == "true")
        let context = Context(
            caller: caller, database: database, body: body, numbersAsStrings: numbersAsStrings, requestID: requestID,
            catchUpWait: try Self.catchUpWait(request), origin: publicURL ?? Self.origin(of: request))
        switch route {
        case .recordsModify: return try await modifyRecords(context)
        case .recordsLookup: return try await kept(operation, request, context) { try lookupRecords(context) }
        case .recordsQuery: return try await kept(operation, request, context) { try queryRecords(context) }
        case .recordsChanges: return try await kept(operation, request, context) { try await recordChanges(context) }
        case .recordsResolve: return try resolveShares(context)
        case .recordsAccept: return try await acceptShares(context)
        case .assetsUpload: return try requestUploadURLs(context)
        case .zonesList: return try listZones(context)
        case .zonesLookup: return try lookupZones(context)
        case .zonesModify: return try await modifyZones(context)
        case .zonesChanges: return try await zoneListChanges(context, metaKeys: true)
        case .changesDatabase: return try await zoneListChanges(context, metaKeys: false)
        case .changesZone: return try await kept(operation, request, context) { try await zoneChanges(context) }
        case .subscriptionsList: return try listSubscriptions(context)
        case .subscriptionsLookup: return try lookupSubscriptions(context)
        case .subscriptionsModify: return try await modifySubscriptions(context)
        case .usersCurrent, .usersCaller:
            guard let user = caller.user else {
                return .error(
                    .authenticationRequired, "sign in to learn who you are",
                    redirectURL: signInURL(request, container: containerName, environment: environment))
            }
            return APIResponse(json: ["userRecordName": .string(user)])
        case .usersDiscover, .usersLookupEmail, .usersLookupID:
            // As CloudKit: finding other users is for a signed-in user.
            guard caller.user != nil else {
                return .error(.authenticationRequired, "sign in to look up other users", redirectURL: "/signin")
            }
            switch route {
            case .usersLookupEmail: return try lookUpUsers(context, by: "emailAddress")
            case .usersLookupID: return try lookUpUsers(context, by: "userRecordName")
            default: return try discoverUsers(request, context)
            }
        default:
            return .error(.notFound, "no endpoint \(request.method) \(operation) in the \(scope) database")
        }
    }

    /// Who sent `request`, charged to their rate limit: a signed-in user to theirs, any
    /// other request to its address's, credentials that fail included (so guessing
    /// tokens is as slow as the address's rate). Every route that serves a client
    /// comes through here once; `/healthz`, `/metrics` and `/replication/*` do not.
    func authenticate(_ request: APIRequest, container: String, environment: DatabaseID.Environment) throws -> Caller {
        let caller: Caller
        do {
            caller = try identify(request, container: container, environment: environment)
        } catch {
            try chargeAddress(of: request)
            throw error
        }
        try charge(caller, for: request)
        return caller
    }

    /// Charges a request to its caller's rate limit: a signed-in user to theirs, anyone
    /// else to their address's.
    func charge(_ caller: Caller, for request: APIRequest) throws {
        guard let user = caller.user else { return try chargeAddress(of: request) }
        if let wait = rateLimiter.takeUser(user, in: caller.container) {
            metrics?.recordLimitHit(.userRequests)
            throw Throttled(
                "this user sent more than \(limits.requestsPerUser) in this container; retry after the time given",
                retryAfter: wait)
        }
    }

    /// Charges `request` to its address's rate limit (nothing, called in process).
    func chargeAddress(of request: APIRequest) throws {
        guard let address = request.clientAddress, let wait = rateLimiter.takeAddress(address) else { return }
        metrics?.recordLimitHit(.addressRequests)
        throw Throttled(
            "this address sent more than \(limits.requestsPerAddress) without signing in; retry after the time given",
            retryAfter: wait)
    }

    /// A server-to-server signature (`Docs/HTTP-API.md`, "Authentication") when the key headers are
    /// present; otherwise the API token (required, and minted for this container and
    /// `environment`) and web auth token (optional) from the query string.
    private func identify(_ request: APIRequest, container: String, environment: DatabaseID.Environment) throws -> Caller {
        if let keyID = request.headers[ServerSignature.keyIDHeader.lowercased()] {
            do {
                return try ServerSignature.verify(
                    request, keyID: keyID, container: container, auth: auth, replays: signatureReplays)
            } catch let error as CumulusError where error.code == .serverRejectedRequest {
                metrics?.recordLimitHit(.signatureReplayCache)
                throw error
            }
        }
        guard let apiToken = request.query["ckAPIToken"], !apiToken.isEmpty else {
            throw CumulusError(.notAuthenticated, "missing ckAPIToken: every request needs the container's API token")
        }
        guard let scope = try auth.scope(forAPIToken: apiToken), scope.opens(container, in: environment) else {
            throw AuthenticationFailure.badAPIToken
        }
        guard let webToken = request.query["ckWebAuthToken"], !webToken.isEmpty else {
            return Caller(container: container, user: nil)
        }
        // A follower's auth table is its leader's copy: only the leader moves an idle
        // session's expiry on.
        guard let user = try auth.user(forWebAuthToken: webToken, container: container, extend: self.leads) else {
            throw AuthenticationFailure.badWebAuthToken
        }
        return Caller(container: container, user: user)
    }

    /// Credentials that do not check out: `AUTHENTICATION_FAILED` (401), saying
    /// nothing about what exists.
    enum AuthenticationFailure: Error {
        case badAPIToken, badWebAuthToken, badSignature(String)
        /// A `webcourierURL` that is damaged, forged, or whose sign-in ended.
        case badWebCourierURL
    }
}
