/// The HTTP server's limits on connections and on how slowly a client may send:
/// what stops a client from holding the server's sockets and memory without ever
/// finishing a request (slowloris). Each is a `cumulus serve` option;
/// `Docs/SECURITY.md` ("Limits") lists them with what they protect.
///
/// The limits on what a request may ask for (items per request, records per
/// response, streams per user) are the API's, in ``CloudKitAPI``.
public struct ServerLimits: Sendable, Equatable {
    /// Connections open at once. At the limit the server stops accepting: new
    /// connections wait in the kernel's backlog until one closes, so a flood of
    /// idle connections delays others by at most ``requestHeadTimeout``.
    public var maxConnections: Int = 1_024
    /// How long a connection may take to send a complete request head, counted from
    /// when it opened or its previous response ended. It also ends keep-alive
    /// connections that stay idle this long.
    public var requestHeadTimeout: Duration = .seconds(30)
    /// How long a request may take to send its body, from its head to its end
    /// (a 4 MiB body at 70 KB/s).
    public var requestBodyTimeout: Duration = .seconds(60)
    /// Bytes of header fields in one request head, all together (and for one field).
    public var maxHeaderBytes: Int = 64 << 10
    /// Bytes of request bodies, and of the JSON they parse into, held at once over all
    /// connections (``BodyBudget``): with every connection sending a 4 MiB body slowly,
    /// memory would otherwise grow with the connection limit. Past it,
    /// `TRY_AGAIN_LATER` before the body is read (or parsed).
    public var maxBodyBufferBytes: Int = 256 << 20
    /// Bytes of responses handed to connections and not yet sent, over all connections
    /// (``ResponseBytes``): each answer may hold up to ``APILimits/responseBytes`` of
    /// records, and a thousand clients asking for such answers at once, reading them
    /// slowly, would otherwise hold them all. A large answer (past 64 KiB) that would
    /// not fit is `TRY_AGAIN_LATER`; one larger than the whole budget is sent when
    /// nothing else is in flight.
    public var maxResponseBufferBytes: Int = 256 << 20
    /// A connection with nothing in flight, neither a request being read nor a
    /// response being written, is closed after this long. Streams (SSE, replication)
    /// keep writing, so they stay open. With the defaults ``requestHeadTimeout``,
    /// being shorter, closes such a connection first; this one matters when that is
    /// raised (behind a proxy that keeps connections open).
    public var idleTimeout: Duration = .seconds(300)
    /// How long the API may take to answer one request once its body is read. Past
    /// it the client gets `TRY_AGAIN_LATER` and its connection is free again; the work
    /// itself cannot be stopped part-way (a commit may still land, as after any
    /// timeout a client sees). Above the longest waits a request may ask for: a long
    /// poll (60 s) and a read-your-writes wait (30 s). Streams (SSE, replication) are
    /// not bound by it once they have started.
    public var requestTimeout: Duration = .seconds(90)
    /// How long a response may wait for its client to read: from when the connection
    /// stops taking bytes (its buffers full) until it takes some again. A client that
    /// asks for a large answer and never reads it would otherwise hold the answer in
    /// the server's memory, and its connection, for as long as it stays connected.
    public var responseWriteTimeout: Duration = .seconds(60)

    /// The defaults.
    public init() {}

    /// Names of the limits as `/metrics` counts their hits
    /// (`cumulus_limit_hits_total{limit=…}`), one place for every label.
    public enum Hit: String, Sendable, CaseIterable {
        /// A connection waited because ``ServerLimits/maxConnections`` were open.
        case connections
        /// A connection closed by ``ServerLimits/requestHeadTimeout``.
        case requestHeadTimeout = "request_head_timeout"
        /// A connection closed by ``ServerLimits/requestBodyTimeout``.
        case requestBodyTimeout = "request_body_timeout"
        /// A request refused for its body size (`CloudKitAPI.maxBodyBytes`).
        case bodyBytes = "body_bytes"
        /// A request refused because ``ServerLimits/maxBodyBufferBytes`` were held.
        case bodyBuffer = "body_buffer"
        /// An answer refused because ``ServerLimits/maxResponseBufferBytes`` were held.
        case responseBuffer = "response_buffer"
        /// A request refused for the number of items it lists.
        case itemsPerRequest = "items_per_request"
        /// A `changes/zone` answer or a lookup cut short by what one response may hold
        /// (its records, or their bytes).
        case recordsPerResponse = "records_per_response"
        /// A notification stream refused: too many open for the user or in all.
        case notificationStreams = "notification_streams"
        /// A long poll refused: ``APILimits/longPollsPerUser`` already waiting.
        case longPolls = "long_polls"
        /// A request refused by ``APILimits/requestsPerUser``.
        case userRequests = "user_requests"
        /// A request refused by ``APILimits/requestsPerAddress``.
        case addressRequests = "address_requests"
        /// A sign-in attempt past its user's or its address's limit (``SignInGuard``).
        case signInAttempts = "sign_in_attempts"
        /// A signed request refused because the replay cache is full.
        case signatureReplayCache = "signature_replay_cache"
        /// A request answered `TRY_AGAIN_LATER` by ``ServerLimits/requestTimeout``.
        case requestTimeout = "request_timeout"
        /// A connection closed by ``ServerLimits/responseWriteTimeout``.
        case responseWriteTimeout = "response_write_timeout"
        /// An upload refused for its size (``APILimits/assetBytes``).
        case assetBytes = "asset_bytes"
    }
}
