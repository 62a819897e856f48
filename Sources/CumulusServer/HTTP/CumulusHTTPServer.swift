import Hummingbird
import Logging

/// Carries HTTP to and from ``CloudKitAPI`` with Hummingbird 2: the server knows
/// nothing of CloudKit, and the API nothing of HTTP.
public enum CumulusHTTPServer {
    /// The HTTP application serving `api` on `host:port`.
    public static func application(
        api: CloudKitAPI, host: String = "127.0.0.1", port: Int = 8765, logger: Logger
    ) -> some ApplicationProtocol {
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            await respond(to: request, api: api)
        }
        return Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "Cumulus"),
            logger: logger)
    }

    /// One exchange; over-long bodies and unreadable streams become CloudKit errors.
    static func respond(to request: Request, api: CloudKitAPI) async -> Response {
        var request = request
        let answer: APIResponse
        do {
            let body = try await request.collectBody(upTo: CloudKitAPI.maxBodyBytes)
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            answer = await api.handle(
                APIRequest(
                    method: request.method.rawValue, path: request.uri.path, query: query,
                    body: Array(body.readableBytesView)))
        } catch {
            answer = .error(.limitExceeded, "the request body is larger than \(CloudKitAPI.maxBodyBytes) bytes or could not be read")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.bodyBytes())))
    }
}
