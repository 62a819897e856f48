import CumulusReplication

/// Every endpoint the server answers, in one table: where its path lies, which
/// methods it takes, how its answer travels, and the label its requests are counted
/// and logged under. ``match(_:)`` is the one place a path is read to find its route:
/// the HTTP layer asks it which answers stream (asset bytes, replication, server-sent
/// events) and which wait on their client, `CloudKitAPI` dispatches on it (a request
/// whose method the table does not list for its route is not served), and `/metrics`
/// and the request log label requests with it.
public enum Route: String, CaseIterable, Sendable {
    // The node.
    case healthz, metrics
    // Browser sign-in (`Docs/HTTP-API.md`, "CloudKit JS").
    case signIn, signOut
    // CloudKit JS's `device` module: /device/1/{container}/{environment}/….
    case deviceTokensCreate, deviceTokensRegister, webCourier
    // Per container environment: /database/1/{container}/{environment}/….
    case tokensCreate, tokensRegister, notificationsPoll, notificationsStream
    // Per database: /database/1/{container}/{environment}/{database}/….
    case recordsModify, recordsLookup, recordsQuery, recordsChanges, recordsResolve, recordsAccept
    case assetsUpload
    case zonesList, zonesLookup, zonesModify, zonesChanges
    case changesDatabase, changesZone
    case subscriptionsList, subscriptionsLookup, subscriptionsModify
    case usersCurrent, usersCaller, usersDiscover, usersLookupEmail, usersLookupID
    // Asset bytes, at the URLs `assets/upload` and record reads hand out.
    case assetUploadFile, assetDownloadFile
    // Node to node (`ReplicationRoute` names the endpoints under it).
    case replication
    // The web console (`Docs/OPERATIONS.md`, "The console"): its page, its files, its
    // session, who an operator acts as, and what its pages read. The console's records
    // pages call the database routes above under `/console/database/1/…`
    // (``Match/viaConsole``), as the session's user.
    case console, consoleAsset, consoleSession, consoleActAs, consoleActing, consoleNode, consoleLogStream, consoleHistory
    case consoleContainers, consoleSchema, consoleReferrers, consoleDeletion, consoleAsOf
    case consoleSchemaText, consoleSchemaImport, consoleSchemaDeploy, consoleSchemaReset, consoleChangeToken
    case consoleJobs, consoleJob, consoleJobDownload, consoleCommit, consoleMetrics, consoleCredentials, consoleShares

    /// Where a route's path lies.
    public enum Place: Sendable, Equatable {
        /// `/{name}`.
        case node(String)
        /// `/device/1/{container}/{environment}/{operation}`.
        case device(String)
        /// `/device/1/{container}/{environment}/webcourier/{ticket}`.
        case webCourier
        /// `/database/1/{container}/{environment}/{operation}`.
        case environment(String)
        /// `/database/1/{container}/{environment}/{database}/{operation}`.
        case database(String)
        /// `/console/{operation}`.
        case console(String)
        /// Everything under `prefix`.
        case prefix(String)
    }

    /// How a route's answer travels.
    public enum Answer: Sendable {
        /// A JSON body made by `CloudKitAPI.handle`, within the request deadline.
        case json
        /// A JSON body made by `CloudKitAPI.handle` that may wait for its client to
        /// go away: a long poll, the web courier. Ends early when the client hangs up.
        case waitsOnClient
        /// `text/event-stream`, open until the client or the server goes.
        case events
        /// File bytes in either direction, streamed.
        case fileBytes
        /// The replication protocol's own answers (`ReplicationEndpoints`).
        case replication
    }

    /// Where the route's path lies.
    public var place: Place {
        switch self {
        case .healthz: .node("healthz")
        case .metrics: .node("metrics")
        case .signIn: .node("signin")
        case .signOut: .node("signout")
        case .deviceTokensCreate: .device("tokens/create")
        case .deviceTokensRegister: .device("tokens/register")
        case .webCourier: .webCourier
        case .tokensCreate: .environment("tokens/create")
        case .tokensRegister: .environment("tokens/register")
        case .notificationsPoll: .environment("notifications/poll")
        case .notificationsStream: .environment("notifications/stream")
        case .recordsModify: .database("records/modify")
        case .recordsLookup: .database("records/lookup")
        case .recordsQuery: .database("records/query")
        case .recordsChanges: .database("records/changes")
        case .recordsResolve: .database("records/resolve")
        case .recordsAccept: .database("records/accept")
        case .assetsUpload: .database("assets/upload")
        case .zonesList: .database("zones/list")
        case .zonesLookup: .database("zones/lookup")
        case .zonesModify: .database("zones/modify")
        case .zonesChanges: .database("zones/changes")
        case .changesDatabase: .database("changes/database")
        case .changesZone: .database("changes/zone")
        case .subscriptionsList: .database("subscriptions/list")
        case .subscriptionsLookup: .database("subscriptions/lookup")
        case .subscriptionsModify: .database("subscriptions/modify")
        case .usersCurrent: .database("users/current")
        case .usersCaller: .database("users/caller")
        case .usersDiscover: .database("users/discover")
        case .usersLookupEmail: .database("users/lookup/email")
        case .usersLookupID: .database("users/lookup/id")
        case .assetUploadFile: .prefix(Self.assetUploadPath)
        case .assetDownloadFile: .prefix(Self.assetDownloadPath)
        case .replication: .prefix(ReplicationRoute.prefix)
        case .console: .node("console")
        case .consoleAsset: .prefix(Self.consoleAssetPath)
        case .consoleSession: .console("session")
        case .consoleActAs: .console("session/act")
        case .consoleActing: .console("api/acting")
        case .consoleNode: .console("api/node")
        case .consoleLogStream: .console("api/log/stream")
        case .consoleHistory: .console("api/history")
        case .consoleContainers: .console("api/containers")
        case .consoleSchema: .console("api/schema")
        case .consoleReferrers: .console("api/records/referrers")
        case .consoleDeletion: .console("api/records/deletion")
        case .consoleAsOf: .console("api/as-of")
        case .consoleSchemaText: .console("api/schema/text")
        case .consoleSchemaImport: .console("api/schema/import")
        case .consoleSchemaDeploy: .console("api/schema/deploy")
        case .consoleSchemaReset: .console("api/schema/reset")
        case .consoleChangeToken: .console("api/change-token")
        case .consoleJobs: .console("api/jobs")
        case .consoleJob: .console("api/jobs/job")
        case .consoleJobDownload: .console("api/jobs/download")
        case .consoleCommit: .console("api/commit")
        case .consoleMetrics: .console("api/metrics")
        case .consoleCredentials: .console("api/credentials")
        case .consoleShares: .console("api/records/shares")
        }
    }

    /// The HTTP methods the route takes; `nil`: any (the node's probes, which a load
    /// balancer or a scraper may send as it likes). Read-only lists and who-am-I take
    /// GET as well as POST, as CloudKit's clients send either.
    public var methods: Set<String>? {
        switch self {
        case .healthz, .metrics: nil
        case .webCourier, .notificationsStream, .console, .consoleAsset, .consoleNode, .consoleLogStream, .consoleHistory,
            .consoleActing, .consoleContainers, .consoleSchema, .consoleReferrers, .consoleDeletion, .consoleAsOf,
            .consoleSchemaText, .consoleJobDownload, .consoleCommit, .consoleMetrics, .consoleShares:
            ["GET"]
        case .consoleJobs, .consoleCredentials: ["GET", "POST"]
        case .consoleJob: ["GET", "DELETE"]
        case .consoleSession: ["GET", "POST", "DELETE"]
        case .consoleActAs: ["POST", "DELETE"]
        case .signIn, .notificationsPoll, .zonesList, .subscriptionsList, .usersCurrent, .usersCaller, .usersDiscover:
            ["GET", "POST"]
        case .assetDownloadFile: ["GET", "HEAD"]
        case .replication: Set(ReplicationRoute.allCases.map(\.method))
        default: ["POST"]
        }
    }

    /// How the route's answer travels.
    public var answer: Answer {
        switch self {
        case .notificationsPoll, .webCourier: .waitsOnClient
        case .notificationsStream, .consoleLogStream: .events
        case .assetUploadFile, .assetDownloadFile: .fileBytes
        case .replication: .replication
        default: .json
        }
    }

    /// The label the route's requests are counted (`cumulus_requests_total`) and logged
    /// under: a fixed name, never a part of the path (a label made from the path would
    /// let anyone grow `/metrics` without bound by asking for random paths).
    public var label: String {
        switch place {
        case .node(let name): name
        case .device(let operation), .environment(let operation), .database(let operation): operation
        case .console(let operation): "console/" + operation
        case .webCourier: "webcourier"
        case .prefix:
            switch self {
            case .assetUploadFile: "assets/upload-file"
            case .assetDownloadFile: "assets/download-file"
            case .consoleAsset: "console/assets"
            default: "replication"
            }
        }
    }

    /// Whether the route is one of the console's own (its page, files, session and
    /// reads), answered by `CloudKitAPI`'s console: every route under `/console`.
    public var isConsole: Bool {
        switch place {
        case .console: true
        case .node(let name): name == "console"
        case .prefix(let prefix): prefix == Self.consoleAssetPath
        default: false
        }
    }

    /// The label of every request whose path names no route.
    public static let unmatchedLabel = "unmatched"

    /// Where upload URLs point: POST the file's bytes to this path ‖ ticket.
    public static let assetUploadPath = "/assets/upload/"
    /// Where download URLs point: GET this path ‖ ticket ‖ `/` ‖ file name.
    public static let assetDownloadPath = "/assets/download/"
    /// Where the console's scripts and styles are: GET this path ‖ file name.
    public static let consoleAssetPath = "/console/assets/"

    /// A path read against the table: the route it names, whatever the method (`nil`:
    /// none), and its segments.
    public struct Match: Sendable {
        /// The route, or `nil` if the path names none.
        public private(set) var route: Route?

        /// The route if it takes `method`, else `nil`.
        public func route(taking method: String) -> Route? {
            route.flatMap { $0.takes(method) ? $0 : nil }
        }
        /// The path's segments, empty ones dropped (for a console database path, those
        /// after `console`).
        public let parts: [String]
        /// Whether the path is a database route under `/console/database/1/…`: called by
        /// the console's page as its signed-in session's user, not with CloudKit's
        /// credentials.
        public var viaConsole = false

        /// A match of `route` for a path of `parts`.
        public init(route: Route?, parts: [String], viaConsole: Bool = false) {
            self.route = route
            self.parts = parts
            self.viaConsole = viaConsole
            afterDatabase = parts.count > 5 ? parts.dropFirst(5).joined(separator: "/") : ""
        }

        /// This match naming `route`, its segments read once.
        func naming(_ route: Route?, viaConsole: Bool = false) -> Match {
            var copy = self
            copy.route = route
            copy.viaConsole = viaConsole
            return copy
        }

        /// `/…/{container}/…`: the container a device or database path names (empty
        /// in a shorter path).
        public var container: String { segment(2) }
        /// The environment's name in such a path (`development`, `production`), unchecked.
        public var environment: String { segment(3) }
        /// The database's name in a database path (`public`, `private`, `shared`), unchecked.
        public var database: String { segment(4) }
        /// A web courier path's ticket.
        public var ticket: String { segment(5) }

        private func segment(_ index: Int) -> String { index < parts.count ? parts[index] : "" }

        /// Whether the path lies under `/device/1/{container}/{environment}/`.
        public var isDevicePath: Bool { parts.count >= 6 && parts[0] == "device" && parts[1] == "1" }
        /// Whether the path lies under `/database/1/{container}/{environment}/{…}`.
        public var isDatabasePath: Bool { parts.count >= 5 && parts[0] == "database" && parts[1] == "1" }
        /// The operation after the environment (`tokens/create`), in a device or
        /// database path.
        public var afterEnvironment: String { parts.dropFirst(4).joined(separator: "/") }
        /// The operation after the database (`records/modify`), in a database path:
        /// joined once, as matching and the API's dispatch both read it.
        public let afterDatabase: String
    }

    /// The routes of each kind of place, by operation.
    private static let byPlace: [Place: Route] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.place, $0) })

    /// Reads `path` against the table.
    public static func match(_ path: String) -> Match {
        for route in [Route.assetUploadFile, .assetDownloadFile, .replication, .consoleAsset] {
            if case .prefix(let prefix) = route.place, path.hasPrefix(prefix) {
                return Match(route: route, parts: [])
            }
        }
        // Split as bytes: the generic split over Characters was half of matching,
        // which every request does twice (perf).
        let parts = path.utf8.split(separator: UInt8(ascii: "/")).map { String(Substring($0)) }
        if parts.count > 1, parts[0] == "console" {
            // A database route under the console: the same route, reached by the
            // console's session instead of CloudKit's credentials. Only database routes:
            // the container-wide ones (tokens, notifications) are not the console's.
            let inner = Array(parts.dropFirst())
            if inner.first == "database" {
                let database = Match(route: nil, parts: inner)
                guard database.isDatabasePath, let route = byPlace[.database(database.afterDatabase)] else {
                    return Match(route: nil, parts: parts)
                }
                return database.naming(route, viaConsole: true)
            }
            return Match(route: byPlace[.console(inner.joined(separator: "/"))], parts: parts)
        }
        let found = Match(route: nil, parts: parts)
        if parts.count == 1 { return found.naming(byPlace[.node(parts[0])]) }
        if found.isDevicePath {
            if parts.count == 6, parts[4] == "webcourier" { return found.naming(.webCourier) }
            return found.naming(byPlace[.device(found.afterEnvironment)])
        }
        if found.isDatabasePath {
            return found.naming(byPlace[.database(found.afterDatabase)] ?? byPlace[.environment(found.afterEnvironment)])
        }
        return found
    }

    /// The label of the route `path` names, or ``unmatchedLabel``.
    public static func label(of path: String) -> String {
        match(path).route?.label ?? unmatchedLabel
    }

    /// Whether the route takes `method`.
    public func takes(_ method: String) -> Bool {
        methods?.contains(method) ?? true
    }
}

extension Route.Place: Hashable {}
