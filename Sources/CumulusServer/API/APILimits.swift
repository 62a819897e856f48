import CumulusEngine
import CumulusModel

/// What one request may ask of the API: how many items it lists, how many records one
/// response holds and how many bytes they take, how many notification streams and long
/// polls a user keeps open and for how long, how many records a query page may read
/// when no index serves it, how large an asset may be; and how many requests a user,
/// or an address, may send. Each is a
/// `cumulus serve` option (`ServerLimitOptions`); `Docs/SECURITY.md` ("Limits")
/// says what each protects. The HTTP server's own limits (connections, deadlines,
/// body buffers) are ``ServerLimits``.
public struct APILimits: Sendable, Equatable {
    /// Items in one request's list: `records/modify` operations, `records/lookup`,
    /// `zones/modify`, `zones/lookup`, `subscriptions/modify`, `subscriptions/lookup`,
    /// the zones of `changes/zone`, and the results of one `records/query` page.
    /// CloudKit's 200; at most the engine's ``Limits/maxItemsPerOperation``.
    public var itemsPerRequest = Limits.maxItemsPerHTTPRequest
    /// Records one `changes/zone` response holds over all its zones: each zone may
    /// ask for up to `Database.maxChangesLimit`, and 200 zones of those would build
    /// 200,000 records in memory for one request.
    public var recordsPerResponse = Database.maxChangesLimit
    /// SSE notification streams one user may hold open at once: a few devices or tabs.
    public var notificationStreamsPerUser = 4
    /// SSE notification streams open at once, all users together.
    public var notificationStreams = 1_000
    /// Long polls (`notifications/poll`) one user may have waiting at once; past it,
    /// `THROTTLED`. Each holds a connection for up to a minute, and one user held 100.
    public var longPollsPerUser = 10
    /// How long an SSE stream lasts before the server ends it; the client reconnects
    /// with `Last-Event-ID` and misses nothing. It bounds how long one stream holds
    /// its place, even for a client that never reads.
    public var notificationStreamLifetime: Duration = .seconds(3_600)
    /// Bytes of records, as stored, after which one response stops adding them (a
    /// query page, a zone's changes, a lookup): records may be 1 MiB each, so 1,000 of
    /// them would make a response of a gigabyte, built in memory. What is left is
    /// served by the next page (`moreComing`, a cursor), or, in a lookup, is that
    /// item's `LIMIT_EXCEEDED` to ask for again. At least one record always goes.
    public var responseBytes = 16 << 20
    /// Records one query page may read when no index serves its order
    /// (``Database/defaultQueryScanLimit``); more is `LIMIT_EXCEEDED`.
    public var queryScanRecords = Database.defaultQueryScanLimit
    /// CPU time one query page or one modify operation's planning may spend
    /// (``Database/defaultRequestCPULimit``), checked as it goes; more is
    /// `LIMIT_EXCEEDED` saying so. It bounds what one request costs everyone: a
    /// modify is planned in the single writer.
    public var requestCPU = Database.defaultRequestCPULimit
    /// Subscriptions one user may hold in one database (``Subscription/maxPerUser``):
    /// each query subscription is matched against every save of its type in the
    /// writer, so one user's count is what they may cost everyone's saves.
    public var subscriptionsPerUser = Subscription.maxPerUser
    /// Bytes one uploaded asset may hold; more is `LIMIT_EXCEEDED`, refused at the
    /// first byte over it. CloudKit's PropertyMetrics say 50 MB, its upload page 15 MB
    /// (`Docs/HTTP-API.md`, "Assets").
    public var assetBytes = Container.defaultMaxAssetBytes
    /// Bytes of uploads one user, and one container, may send within the grace an
    /// unreferenced upload is kept (``UploadQuota``); past either, `QUOTA_EXCEEDED`.
    public var uploadQuota = UploadQuota()
    /// Sign-in attempts (password or one-time code) one user may have made against
    /// them, and one address may make, on the sign-in page (``SignInGuard``); past
    /// either, `THROTTLED`. A person mistyping gets several tries a minute; a guesser
    /// gets a few thousand a day per user, against scrypt-hashed passwords.
    public var signInAttemptsPerUser = RequestRate(perSecond: 5.0 / 60, burst: 5)
    public var signInAttemptsPerAddress = RequestRate(perSecond: 20.0 / 60, burst: 20)
    /// Addresses of reverse proxies whose `X-Forwarded-For` names the client, for the
    /// sign-in page's per-address limit (`serve --trusted-proxy`). Anyone else's header
    /// is ignored.
    public var trustedProxies: [String] = []
    /// How long a GET of a `webcourierURL` waits for a notification before it answers
    /// JSON `null` (CloudKit JS asks again at once). Below the request timeout.
    public var webCourierWait: Duration = .seconds(30)
    /// Bytes the records one user pays for, and all records of one container, may
    /// hold (``RecordQuota``); a save past either is `QUOTA_EXCEEDED`.
    public var recordQuota = RecordQuota()

    /// Requests one signed-in user may send, in one container (``RateLimiter``); past
    /// it, `THROTTLED` with `retryAfter`. A client syncing flat out sends a few a second.
    public var requestsPerUser = RequestRate(perSecond: 50, burst: 200)
    /// Requests one address may send that no user is signed in to (an API token alone,
    /// server-to-server keys, failed credentials); past it, `THROTTLED`. Higher than a
    /// user's: many readers of a public database may share an address (NAT). Behind a
    /// reverse proxy every such request comes from the proxy's address.
    public var requestsPerAddress = RequestRate(perSecond: 200, burst: 1_000)
    /// Users, and addresses, whose request buckets are kept at once (each table): a
    /// flood of distinct addresses is refused past it rather than remembered. A bucket
    /// is dropped once full again (at the defaults, 4 s after a user's last request,
    /// 5 s after an address's), so only clients that are sending count.
    public var rateLimitedClients = 100_000

    /// The defaults.
    public init() {}
}
