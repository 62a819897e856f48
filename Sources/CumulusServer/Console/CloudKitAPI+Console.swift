import CumulusModel
import CumulusReplication
import Foundation

/// The web console's endpoints (`Docs/OPERATIONS.md`, "The console"): the page and its
/// files, the session (`/console/session`: GET who is signed in, POST sign in, DELETE
/// sign out), and what the pages read (`/console/api/…`).
///
/// **Who.** A user signs in with their password, as on the sign-in page, and the same
/// attempt limits apply; an operator (`cumulus users add --operator`) may also open the
/// operator pages. **How.** The session is an HttpOnly, SameSite=Strict cookie scoped to
/// `/console`; each write (POST, DELETE) of a signed-in session sends its CSRF token in
/// ``ConsoleSessions/csrfHeader``, and a sign-in must come from this node's own page (its
/// `Origin`, if sent, is this node's). No credential is ever put in a URL.
extension CloudKitAPI {
    /// Serves the console's `route`, or `404` on a node that does not serve it.
    func console(_ request: APIRequest, route: Route, requestID: String) async throws -> APIResponse {
        guard let sessions = consoleSessions else {
            return .error(.notFound, "this node does not serve the console; start it with --console (or --dev)")
        }
        do {
            return try await consoleAnswer(request, route: route, sessions, requestID: requestID)
        } catch {
            // A refusal, or what a page asked for failing (no such record): with the
            // console's headers, as every console answer.
            var response = Self.errorResponse(error)
            response.headers = Self.consoleHeaders
            return response
        }
    }

    /// Why a console request is refused, with the wire code it is answered with.
    struct ConsoleRefusal: Error {
        var code: ServerErrorCode
        var reason: String
        var retryAfter: Int?
    }

    private func consoleAnswer(
        _ request: APIRequest, route: Route, _ sessions: ConsoleSessions, requestID: String
    ) async throws -> APIResponse {
        switch route {
        case .console:
            return Self.consoleFile(PackageResources.console_html, contentType: "text/html; charset=utf-8")
        case .consoleAsset:
            let name = String(request.path.dropFirst(Route.consoleAssetPath.count))
            guard let file = Self.consoleFiles[name] else { return .error(.notFound, "no console file \(name)") }
            return Self.consoleFile(file.bytes, contentType: file.type)
        case .consoleSession:
            switch request.method {
            case "POST": return try await consoleSignIn(request, sessions)
            case "DELETE":
                let (token, _) = try consoleSession(request, sessions, writing: true)
                sessions.end(token)
                return consoleJSON(["signedOut": true], clearingCookie: true)
            default:
                let (_, session) = try consoleSession(request, sessions, writing: false)
                return consoleJSON(Self.describe(session))
            }
        case .consoleActAs:
            return consoleJSON(try consoleActAs(request, sessions))
        case .consoleActing:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleActing())
        case .consoleContainers:
            _ = try consoleSession(request, sessions, writing: false)
            return consoleJSON(try consoleContainers())
        case .consoleSchema:
            _ = try consoleSession(request, sessions, writing: false)
            return consoleJSON(try consoleSchema(request))
        case .consoleReferrers:
            let (_, session) = try consoleSession(request, sessions, writing: false)
            return consoleJSON(try await consoleReading(request, session).consoleReferrers(request, session))
        case .consoleSchemaText:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleSchemaText(of: try Self.consoleParameter(request, "container")))
        case .consoleSchemaImport, .consoleSchemaDeploy, .consoleSchemaReset:
            let (_, session) = try consoleOperator(request, sessions)
            return consoleJSON(try await consoleSchemaChange(request, route, operator: session.user, requestID: requestID))
        case .consoleJobs, .consoleJob, .consoleJobDownload:
            let (_, session) = try consoleOperator(request, sessions)
            guard let jobs = consoleJobs else { throw ConsoleRefusal(code: .notFound, reason: "this node runs no console jobs") }
            switch route {
            case .consoleJobs: return consoleJSON(try consoleJobs(request, session, jobs))
            case .consoleJob: return consoleJSON(try consoleJob(request, jobs))
            default: return try consoleJobDownload(request, jobs)
            }
        case .consoleCredentials:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleCredentials(request))
        case .consoleMetrics:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(consoleMetrics())
        case .consoleCommit:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleCommit(request))
        case .consoleChangeToken:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleChangeToken(request))
        case .consoleAsOf:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try await consoleAsOf(request))
        case .consoleShares:
            let (_, session) = try consoleSession(request, sessions, writing: false)
            return consoleJSON(try consoleShares(request, session))
        case .consoleDeletion:
            let (_, session) = try consoleSession(request, sessions, writing: false)
            return consoleJSON(try await consoleDeletion(request, session))
        case .consoleNode:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleNodeStatus())
        case .consoleHistory:
            _ = try consoleOperator(request, sessions)
            return consoleJSON(try consoleHistory(request))
        default:
            return .error(.notFound, "no such console endpoint: \(request.path)")
        }
    }

    /// The console's files, compiled into the binary (`Console/Resources/`), by the name
    /// a page asks for them under ``Route/consoleAssetPath``, with their media types.
    static let consoleFiles: [String: (bytes: [UInt8], type: String)] = [
        "console.js": (PackageResources.console_js, "text/javascript; charset=utf-8"),
        "support.js": (PackageResources.support_js, "text/javascript; charset=utf-8"),
        "records.js": (PackageResources.records_js, "text/javascript; charset=utf-8"),
        "schema.js": (PackageResources.schema_js, "text/javascript; charset=utf-8"),
        "tokens.js": (PackageResources.tokens_js, "text/javascript; charset=utf-8"),
        "jobs.js": (PackageResources.jobs_js, "text/javascript; charset=utf-8"),
        "charts.js": (PackageResources.charts_js, "text/javascript; charset=utf-8"),
        "console.css": (PackageResources.console_css, "text/css; charset=utf-8"),
    ]

    /// A file of the console: its bytes, with the console's headers.
    static func consoleFile(_ bytes: [UInt8], contentType: String) -> APIResponse {
        var response = APIResponse(json: .null)
        response.text = String(decoding: bytes, as: UTF8.self)
        response.contentType = contentType
        response.headers = consoleHeaders
        return response
    }

    /// What every console answer carries: its own scripts and styles only, never in a
    /// frame, never cached, never sniffed.
    static let consoleHeaders = [
        "content-security-policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "x-frame-options": "DENY", "referrer-policy": "same-origin", "cache-control": "no-store",
        "x-content-type-options": "nosniff",
    ]

    /// The session the request's cookie names, and its token; `authenticationFailed`
    /// without one. A write must also send the session's CSRF token (`forbidden`
    /// otherwise).
    func consoleSession(_ request: APIRequest, _ sessions: ConsoleSessions, writing: Bool) throws
        -> (token: String, session: ConsoleSessions.Session)
    {
        guard let token = Self.cookie(ConsoleSessions.cookie, in: request.headers["cookie"]),
            let session = sessions.session(token)
        else {
            throw ConsoleRefusal(code: .authenticationFailed, reason: "sign in to the console first")
        }
        if writing {
            guard let sent = request.headers[ConsoleSessions.csrfHeader],
                ConstantTime.equal(Array(sent.utf8), Array(session.csrf.utf8))
            else {
                throw ConsoleRefusal(code: .accessDenied, reason: "a console write needs its session's CSRF token in X-Cumulus-CSRF")
            }
        }
        return (token, session)
    }

    /// `POST /console/session` with `{"user", "password"}`: checks the password as the
    /// sign-in page does, under the same attempt limits, and starts a session.
    private func consoleSignIn(_ request: APIRequest, _ sessions: ConsoleSessions) async throws -> APIResponse {
        // Only this node's own page signs in: a page of another site cannot post here
        // with a credential the user typed there into a session cookie of ours.
        if let origin = request.headers["origin"], !consoleOrigins(of: request).contains(origin) {
            throw ConsoleRefusal(code: .accessDenied, reason: "a console sign-in comes from the console's own page")
        }
        guard case .object(let body)? = try? JSONValue.parse(Data(request.body)),
            case .string(let user)? = body["user"], case .string(let password)? = body["password"],
            !user.isEmpty, user.utf8.count <= 255
        else {
            throw ConsoleRefusal(code: .badRequest, reason: "send {\"user\": …, \"password\": …}")
        }
        if let wait = signInGuard.admit(user: user, address: signInGuard.clientAddress(of: request)) {
            metrics?.recordLimitHit(.signInAttempts)
            let seconds = Int(max(1, wait.components.seconds))
            throw ConsoleRefusal(code: .throttled, reason: "too many attempts; try again in \(seconds) s", retryAfter: seconds)
        }
        guard try auth.checkPassword(password, for: user) else {
            throw ConsoleRefusal(code: .authenticationFailed, reason: "the user name or password is not right")
        }
        let (token, session) = sessions.start(user: user, isOperator: try auth.isOperator(user))
        var response = consoleJSON(Self.describe(session))
        response.headers["set-cookie"] = consoleCookie(token, request)
        return response
    }

    /// The origins this node's own page may have: ``publicOrigin``, and the one the
    /// request was sent to (its `Host`), so a page opened at `localhost` signs in as one
    /// opened at `127.0.0.1` does. A page of another site sends its own origin, which
    /// names neither.
    private func consoleOrigins(of request: APIRequest) -> Set<String> {
        var origins = Set<String>()
        if let publicOrigin { origins.insert(publicOrigin) }
        if let host = request.headers["host"] {
            let forwardedTLS = request.headers["x-forwarded-proto"] == "https"
            origins.insert((request.overTLS || forwardedTLS ? "https://" : "http://") + host)
        }
        return origins
    }

    /// The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other
    /// site's request carries it), scoped to the console's paths, Secure over https.
    private func consoleCookie(_ token: String, _ request: APIRequest) -> String {
        let secure = request.overTLS || publicURL?.hasPrefix("https:") == true ? "; Secure" : ""
        return "\(ConsoleSessions.cookie)=\(token); Path=/console; HttpOnly; SameSite=Strict\(secure)"
    }

    /// A console JSON answer, with the console's headers.
    func consoleJSON(_ json: JSONValue, clearingCookie: Bool = false) -> APIResponse {
        var response = APIResponse(json: json)
        response.headers = Self.consoleHeaders
        if clearingCookie {
            response.headers["set-cookie"] = "\(ConsoleSessions.cookie)=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict"
        }
        return response
    }

    /// Who is signed in, and the CSRF token the page sends with its writes.
    static func describe(_ session: ConsoleSessions.Session) -> JSONValue {
        var description: [String: JSONValue] = [
            "user": .string(session.user), "operator": .bool(session.isOperator), "csrf": .string(session.csrf),
        ]
        if let acting = session.actingAs { description["actingAs"] = .string(acting) }
        return .object(description)
    }

    /// The node for the cluster page: its role, epoch and head, its followers' lag or
    /// its leader, the cluster as it sees it, and its history (`/replication/status`'s
    /// body, on a node without replication too).
    private func consoleNodeStatus() throws -> JSONValue {
        var status =
            replication?.status() ?? node.map { ReplicationStatus.of($0) }
            ?? ReplicationStatus.of(container, role: leads ? "leader" : "superseded")
        if (status.history ?? []).isEmpty { status.history = container.history.changes }
        return try JSONValue.parse(JSONEncoder().encode(status))
    }
}
