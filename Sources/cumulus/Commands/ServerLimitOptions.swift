import ArgumentParser
import CumulusEngine
import CumulusModel
import CumulusServer

/// `cumulus serve`'s limits on connections and slow clients (``ServerLimits``) and on
/// what one request, and one client, may ask for (``APILimits``); each default is the struct's, so the
/// help and the code cannot disagree.
struct ServerLimitOptions: ParsableArguments {
    private static let defaults = ServerLimits()
    private static let apiDefaults = APILimits()

    @Option(help: "Connections open at once; past it, new ones wait to be accepted.")
    var maxConnections = defaults.maxConnections
    @Option(help: "Seconds a connection may take to send a request head (from opening, or from its previous response).")
    var requestHeadTimeout = Int(defaults.requestHeadTimeout.components.seconds)
    @Option(help: "Seconds a request may take to send its body, from its head.")
    var requestBodyTimeout = Int(defaults.requestBodyTimeout.components.seconds)
    @Option(help: "Bytes of header fields one request may send.")
    var maxHeaderBytes = defaults.maxHeaderBytes
    @Option(help: "Bytes of request bodies, and of the JSON they parse into, held at once over all connections; past it, TRY_AGAIN_LATER.")
    var maxBodyBufferBytes = defaults.maxBodyBufferBytes
    @Option(help: "Bytes of large answers held at once over all connections until they are sent; past it, TRY_AGAIN_LATER.")
    var maxResponseBufferBytes = defaults.maxResponseBufferBytes
    @Option(help: "Seconds a connection with no request or response under way stays open.")
    var idleTimeout = Int(defaults.idleTimeout.components.seconds)
    @Option(help: "Seconds the server may take to answer one request once its body is read; past it, TRY_AGAIN_LATER.")
    var requestTimeout = Int(defaults.requestTimeout.components.seconds)
    @Option(help: "Seconds a response may wait for its client to read before the connection is closed.")
    var responseWriteTimeout = Int(defaults.responseWriteTimeout.components.seconds)
    @Option(help: "Items one request may list (operations, lookups, zones of changes/zone, results of a query page); CloudKit's is 200.")
    var maxItemsPerRequest = apiDefaults.itemsPerRequest
    @Option(help: "Records one changes/zone response may hold over all its zones.")
    var maxRecordsPerResponse = apiDefaults.recordsPerResponse
    @Option(help: "SSE notification streams one user may hold open.")
    var maxStreamsPerUser = apiDefaults.notificationStreamsPerUser
    @Option(help: "SSE notification streams open at once, all users together.")
    var maxStreams = apiDefaults.notificationStreams
    @Option(help: "Long polls (notifications/poll) one user may have waiting at once; past it, THROTTLED.")
    var maxLongPollsPerUser = apiDefaults.longPollsPerUser
    @Option(help: "Requests per second one signed-in user may send in a container, on average; past it, THROTTLED with retryAfter (0: no limit).")
    var userRequestsPerSecond = apiDefaults.requestsPerUser.perSecond
    @Option(help: "Requests one signed-in user may send at once after a quiet spell.")
    var userRequestBurst = apiDefaults.requestsPerUser.burst
    @Option(help: "Requests per second one address may send with no user signed in (API token alone, server-to-server, failed credentials); past it, THROTTLED (0: no limit; behind a proxy every such request has the proxy's address).")
    var addressRequestsPerSecond = apiDefaults.requestsPerAddress.perSecond
    @Option(help: "Requests one address may send at once, with no user signed in, after a quiet spell.")
    var addressRequestBurst = apiDefaults.requestsPerAddress.burst
    @Option(help: "Users, and addresses, whose request rates are tracked at once; new ones past it are THROTTLED until others go quiet.")
    var maxRateLimitedClients = apiDefaults.rateLimitedClients
    @Option(help: "Seconds an SSE notification stream lasts before the client must reconnect (it misses nothing).")
    var streamLifetime = Int(apiDefaults.notificationStreamLifetime.components.seconds)
    @Option(help: "Bytes of records (as stored) after which one response stops adding them; the rest come on the next page.")
    var maxResponseBytes = apiDefaults.responseBytes
    @Option(help: "Records one query page may read when no index serves its order; past it, LIMIT_EXCEEDED.")
    var maxQueryScan = apiDefaults.queryScanRecords
    @Option(help: "Milliseconds of CPU time one query page or one modify operation's planning may spend; past it, LIMIT_EXCEEDED.")
    var maxRequestCpuMs = Int(apiDefaults.requestCPU.components.seconds * 1_000)
    @Option(help: "Subscriptions one user may hold in one database; past it, LIMIT_EXCEEDED.")
    var maxSubscriptionsPerUser = apiDefaults.subscriptionsPerUser
    @Option(help: "Bytes one user may upload in one container within the asset grace; past it, QUOTA_EXCEEDED.")
    var maxUploadBytesPerUser = apiDefaults.uploadQuota.bytesPerUser
    @Option(help: "Bytes all users of one container may upload within the asset grace; past it, QUOTA_EXCEEDED.")
    var maxUploadBytesPerContainer = apiDefaults.uploadQuota.bytesPerContainer
    @Option(
        name: .customLong("trusted-proxy"),
        help: "The address of a reverse proxy whose X-Forwarded-For names the client, for the sign-in page's per-address limit; repeat for more. Anyone else's header is ignored.")
    var trustedProxies: [String] = []
    @Option(help: "Bytes the records one user pays for may hold in one container (assets included); past it, saves are QUOTA_EXCEEDED.")
    var maxRecordBytesPerUser = apiDefaults.recordQuota.bytesPerUser
    @Option(help: "Bytes all records of one container may hold (assets included); past it, saves are QUOTA_EXCEEDED.")
    var maxRecordBytesPerContainer = apiDefaults.recordQuota.bytesPerContainer
    @Option(help: "Bytes one uploaded asset may hold (CloudKit: 50 MB per its limits page, 15 MB per its upload page); past it, LIMIT_EXCEEDED.")
    var maxAssetBytes = apiDefaults.assetBytes

    func validate() throws {
        guard maxConnections >= 1 else { throw ValidationError("--max-connections is at least 1") }
        guard requestHeadTimeout >= 1, requestBodyTimeout >= 1, idleTimeout >= 1, requestTimeout >= 1,
            responseWriteTimeout >= 1
        else {
            throw ValidationError("timeouts are whole seconds, at least 1")
        }
        guard maxHeaderBytes >= 1_024 else { throw ValidationError("--max-header-bytes is at least 1024") }
        // One request's largest body and what its JSON may take once parsed, or such
        // a request could never be served.
        let largest = CloudKitAPI.maxBodyBytes + JSONValue.memoryLimit(forBodyBytes: CloudKitAPI.maxBodyBytes)
        guard maxBodyBufferBytes >= largest else {
            throw ValidationError("--max-body-buffer-bytes is at least \(largest) (one request's largest body and its parse)")
        }
        guard maxResponseBufferBytes >= 16 << 20 else {
            throw ValidationError("--max-response-buffer-bytes is at least 16777216")
        }
        guard (1...Limits.maxItemsPerOperation).contains(maxItemsPerRequest) else {
            throw ValidationError("--max-items-per-request is from 1 to \(Limits.maxItemsPerOperation) (one operation's most)")
        }
        guard maxRecordsPerResponse >= 1 else { throw ValidationError("--max-records-per-response is at least 1") }
        guard maxResponseBytes >= Limits.maxRecordSize else {
            throw ValidationError("--max-response-bytes is at least \(Limits.maxRecordSize) (one record's largest size)")
        }
        guard maxStreamsPerUser >= 1, maxStreams >= maxStreamsPerUser else {
            throw ValidationError("--max-streams-per-user is at least 1, and --max-streams at least that")
        }
        guard maxLongPollsPerUser >= 1 else { throw ValidationError("--max-long-polls-per-user is at least 1") }
        for (name, perSecond, burst) in [
            ("user", userRequestsPerSecond, userRequestBurst), ("address", addressRequestsPerSecond, addressRequestBurst),
        ] {
            // Tiny rates would make refill times too long to represent.
            guard perSecond == 0 || (0.01...1_000_000).contains(perSecond) else {
                throw ValidationError("--\(name)-requests-per-second is 0 (no limit) or from 0.01 to 1000000")
            }
            guard (1...1_000_000).contains(burst) else {
                throw ValidationError("--\(name)-request-burst is from 1 to 1000000")
            }
        }
        guard maxRateLimitedClients >= 1 else { throw ValidationError("--max-rate-limited-clients is at least 1") }
        guard streamLifetime >= 1 else { throw ValidationError("--stream-lifetime is whole seconds, at least 1") }
        guard maxQueryScan >= Database.maxResultsLimit else {
            throw ValidationError("--max-query-scan is at least \(Database.maxResultsLimit) (one page's most results)")
        }
        guard maxAssetBytes >= 1 else { throw ValidationError("--max-asset-bytes is at least 1") }
        guard maxRequestCpuMs >= 10 else { throw ValidationError("--max-request-cpu-ms is at least 10") }
        guard maxUploadBytesPerUser >= 1, maxUploadBytesPerContainer >= maxUploadBytesPerUser else {
            throw ValidationError("--max-upload-bytes-per-user is at least 1, and --max-upload-bytes-per-container at least that")
        }
        guard maxRecordBytesPerUser >= 1, maxRecordBytesPerContainer >= maxRecordBytesPerUser else {
            throw ValidationError("--max-record-bytes-per-user is at least 1, and --max-record-bytes-per-container at least that")
        }
        guard maxSubscriptionsPerUser >= 1 else { throw ValidationError("--max-subscriptions-per-user is at least 1") }
    }

    /// The limits these options set.
    var limits: ServerLimits {
        var limits = ServerLimits()
        limits.maxConnections = maxConnections
        limits.requestHeadTimeout = .seconds(requestHeadTimeout)
        limits.requestBodyTimeout = .seconds(requestBodyTimeout)
        limits.maxHeaderBytes = maxHeaderBytes
        limits.maxBodyBufferBytes = maxBodyBufferBytes
        limits.maxResponseBufferBytes = maxResponseBufferBytes
        limits.idleTimeout = .seconds(idleTimeout)
        limits.requestTimeout = .seconds(requestTimeout)
        limits.responseWriteTimeout = .seconds(responseWriteTimeout)
        return limits
    }

    /// The API limits these options set.
    var apiLimits: APILimits {
        var limits = APILimits()
        limits.itemsPerRequest = maxItemsPerRequest
        limits.recordsPerResponse = maxRecordsPerResponse
        limits.notificationStreamsPerUser = maxStreamsPerUser
        limits.notificationStreams = maxStreams
        limits.notificationStreamLifetime = .seconds(streamLifetime)
        limits.longPollsPerUser = maxLongPollsPerUser
        limits.requestsPerUser = RequestRate(perSecond: userRequestsPerSecond, burst: userRequestBurst)
        limits.requestsPerAddress = RequestRate(perSecond: addressRequestsPerSecond, burst: addressRequestBurst)
        limits.rateLimitedClients = maxRateLimitedClients
        limits.queryScanRecords = maxQueryScan
        limits.responseBytes = maxResponseBytes
        limits.assetBytes = maxAssetBytes
        limits.requestCPU = .milliseconds(maxRequestCpuMs)
        limits.subscriptionsPerUser = maxSubscriptionsPerUser
        limits.uploadQuota.bytesPerUser = maxUploadBytesPerUser
        limits.uploadQuota.bytesPerContainer = maxUploadBytesPerContainer
        limits.trustedProxies = trustedProxies
        limits.recordQuota = RecordQuota(bytesPerUser: maxRecordBytesPerUser, bytesPerContainer: maxRecordBytesPerContainer)
        return limits
    }
}
