import CumulusModel
import CumulusReplication
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle

/// Carries HTTP to and from ``CloudKitAPI`` with Hummingbird 2: the server knows
/// nothing of CloudKit, and the API nothing of HTTP.
public enum CumulusHTTPServer {
    /// The HTTP application serving `api` on `host:port` within `limits`, over TLS
    /// when `tls` is given; `onListening` hears the port once it listens.
    public static func application(
        api: CloudKitAPI, host: String = "127.0.0.1", port: Int = 8765, limits: ServerLimits = .init(), tls: ServerTLS? = nil,
        logger: Logger, onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let budget = BodyBudget(bytes: limits.maxBodyBufferBytes)
        let responses = ResponseBytes(limit: limits.maxResponseBufferBytes)
        let responder = CallbackResponder<CumulusRequestContext> { request, context in
            await respond(
                to: request, api: api, budget: budget, responses: responses, timeout: limits.requestTimeout,
                channel: context.channel, overTLS: tls != nil)
        }
        let metrics = api.metrics
        let onHit: @Sendable (ServerLimits.Hit) -> Void = { hit in metrics?.recordLimitHit(hit) }
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                RequestDeadlineHandler(limits: limits, onHit: onHit), ResponseBytes.Handler(responses), HangUpHandler(),
            ],
            // An idle SSE client reconnects with Last-Event-ID.
            idleTimeout: TimeAmount(limits.idleTimeout),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes, maxHeaderFieldCount: 200))
        // TLS wraps each connection below HTTP; the context is made when the server
        // starts (ServerTLS already made one, so a bad key was refused before).
        let server = tls.map { tls in
            HTTPServerBuilder { responder in
                try TLSChannel(HTTP1Channel(responder: responder, configuration: http), tlsConfiguration: tls.configuration)
            }
        } ?? .http1(configuration: http)
        return Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: "Cumulus",
                availableConnectionsDelegate: ConnectionLimit(maxConnections: limits.maxConnections, onHit: onHit)),
            // The port it listens on, which port 0 leaves to the system: tests bind to 0
            // rather than guess a free port another process could take first.
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    /// One exchange; over-long bodies and unreadable streams become CloudKit errors.
    /// The body's bytes are reserved from `budget` before it is read, and held until
    /// the answer is made; the API has `timeout` to make it (``RequestDeadline``). A
    /// large answer is sent only if `responses` admits it. `channel`, the request's
    /// connection, gives its client's address (the per-address rate limit) and, for a
    /// long poll, notice of the client hanging up. `overTLS`: the connection is TLS, so
    /// the URLs handed out are https.
    static func respond(
        to request: Request, api: CloudKitAPI, budget: BodyBudget, responses: ResponseBytes? = nil,
        timeout: Duration = ServerLimits().requestTimeout, channel: (any Channel)? = nil, overTLS: Bool = false
    ) async -> Response {
        var request = request
        let answer: APIResponse
        let match = Route.match(request.uri.path)
        let route = match.route
        if let route, route.answer == .fileBytes { return await assetExchange(request, route: route, api: api) }
        // A declared length over the limit is refused before a byte is read.
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > CloudKitAPI.maxBodyBytes {
            api.metrics?.recordLimitHit(.bodyBytes)
            return json(.error(.limitExceeded, "a request body of \(declared) bytes; the limit is \(CloudKitAPI.maxBodyBytes)"))
        }
        // A GET, HEAD or OPTIONS without a length takes nothing (and may send at most 1 KiB); any
        // other request without one (chunked) may grow to the limit, so reserves it.
        let bodiless = request.method == .get || request.method == .head || request.method == .options
        let needed = declared ?? (bodiless ? 0 : CloudKitAPI.maxBodyBytes)
        guard let reservation = budget.reserve(needed) else { return budgetRefusal("reading", api) }
        defer { withExtendedLifetime(reservation) {} }
        var parsing: BodyBudget.Reservation?
        defer { withExtendedLifetime(parsing) {} }
        do {
            let body = try await request.collectBody(upTo: max(needed, 1_024))
            // What the body's JSON may take once parsed is held from the same budget.
            if body.readableBytes > 0 {
                guard let parse = budget.reserve(JSONValue.memoryLimit(forBodyBytes: body.readableBytes)) else {
                    return budgetRefusal("parsing", api)
                }
                parsing = parse
            }
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            // HTTP/1's Host travels as the authority, not among the fields.
            if headers["host"] == nil, let authority = request.head.authority { headers["host"] = authority }
            var received = APIRequest(
                method: request.method.rawValue, path: request.uri.path, query: query, rawQuery: request.uri.query,
                headers: headers,
                body: Array(body.readableBytesView), clientAddress: channel?.remoteAddress?.ipAddress)
            received.overTLS = overTLS
            let apiRequest = received.matching(match)
            if route?.answer == .replication {
                return await replication(apiRequest, api: api)
            }
            if let route, route.answer == .events, route.takes(request.method.rawValue) {
                do {
                    let events = try api.events(route, apiRequest)
                    api.metrics?.recordRequest(route: route.label, status: 200)
                    var fields = HTTPFields()
                    fields[.contentType] = "text/event-stream"
                    fields[.cacheControl] = "no-cache"
                    return Response(
                        status: .ok, headers: fields,
                        body: ResponseBody(asyncSequence: events.map { ByteBuffer(string: $0) }.cancelOnGracefulShutdown()))
                } catch {
                    answer = CloudKitAPI.errorResponse(error)
                    return json(answer)
                }
            }
            // Only a long poll ends when its client goes: it only waits, and it holds
            // one of its user's few places (other work runs to its end regardless).
            var hangUp: HangUpHandler.Signal?
            if let channel, route?.answer == .waitsOnClient {
                hangUp = await HangUpHandler.signal(of: channel)
            }
            answer = await RequestDeadline.answer(within: timeout, metrics: api.metrics, hangUp: hangUp) {
                await api.handle(apiRequest)
            }
        } catch {
            api.metrics?.recordLimitHit(.bodyBytes)
            answer = .error(.limitExceeded, "the request body is larger than \(max(needed, 1_024)) bytes (its declared length, or the limit) or could not be read")
        }
        return json(answer, holdingFrom: responses, api: api)
    }

    /// `TRY_AGAIN_LATER` for a request that found the body budget spent while the
    /// server was `doing` (reading or parsing) others, counted.
    static func budgetRefusal(_ doing: String, _ api: CloudKitAPI) -> Response {
        api.metrics?.recordLimitHit(.bodyBuffer)
        return json(.error(
            .tryAgainLater, "the server is \(doing) as many request bodies as it holds at once; retry shortly", retryAfter: 1))
    }

    /// `/replication/*`: JSON answers, or the frame stream and snapshots as
    /// `application/octet-stream`, pulled as the connection drains. Endless bodies
    /// (this stream, SSE) end on graceful shutdown, or the server would wait for them.
    static func replication(_ request: APIRequest, api: CloudKitAPI) async -> Response {
        guard let endpoints = api.replication else {
            return json(.error(.notFound, "this node does not replicate; start it with --replication-secret"))
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/octet-stream"
        switch await endpoints.answer(request) {
        case .json(let status, let bytes):
            fields[.contentType] = "application/json; charset=utf-8"
            return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        case .bytes(let bytes):
            return Response(status: .ok, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        case .stream(let stream):
            return Response(status: .ok, headers: fields, body: ResponseBody(asyncSequence: stream.map { ByteBuffer(bytes: $0) }.cancelOnGracefulShutdown()))
        case .snapshot(let file):
            return Response(status: .ok, headers: fields, body: ResponseBody(asyncSequence: file.cancelOnGracefulShutdown()))
        }
    }

    /// A header name, if `name` is a valid one.
    static func fieldName(_ name: String) -> HTTPField.Name? { HTTPField.Name(name) }

    /// Answers up to this size are sent without asking the response budget: most are a
    /// few kilobytes, and the connection limit bounds what they hold together.
    static let unbudgetedResponseBytes = 64 << 10

    /// `answer` as an HTTP response. With `responses`, a body over
    /// ``unbudgetedResponseBytes`` is refused with `TRY_AGAIN_LATER` unless the bytes
    /// other connections have not yet sent leave room for it.
    static func json(_ answer: APIResponse, holdingFrom responses: ResponseBytes? = nil, api: CloudKitAPI? = nil) -> Response {
        var headers = HTTPFields()
        for (name, value) in answer.headers {
            if let field = fieldName(name) { headers[field] = value }
        }
        guard answer.hasBody else { return Response(status: HTTPResponse.Status(code: answer.status), headers: headers) }
        headers[.contentType] =
            answer.text == nil ? "application/json; charset=utf-8" : answer.contentType ?? "text/plain; version=0.0.4"
        let bytes = answer.bodyBytes()
        if let responses, bytes.count > unbudgetedResponseBytes, !responses.admits(bytes.count) {
            api?.metrics?.recordLimitHit(.responseBuffer)
            return json(.error(
                .tryAgainLater, "the server is sending as many large answers as it holds at once; retry shortly",
                retryAfter: 1))
        }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
