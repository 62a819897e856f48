import Crypto
import CumulusEngine
import CumulusModel
import Foundation

/// Browser sign-in (issue 41; `Docs/HTTP-API.md`, "CloudKit JS"): the page a `421`'s `redirectURL`
/// opens in CloudKit JS's popup, which signs a user in with a password or a one-time
/// code and hands a fresh web auth token, bound to the container, to the app's window
/// by `postMessage` (to the app's origin only); and sign-out, which revokes a token.
///
/// Routes: `GET /signin?container=…&environment=…&ckAPIToken=…[&origin=…]` (the form),
/// `POST /signin` (the form's fields), `POST /signout?ckWebAuthToken=…`.
///
/// Against cross-site requests: the form's POST must carry the value of a
/// `SameSite=Strict`, `HttpOnly` cookie the form set (double submit), and an `Origin`
/// header, when sent, must be this server's. Against guessing: ``SignInGuard``.
/// Against leaks: the session goes to the app by `postMessage` only, never in a URL.
extension CloudKitAPI {
    /// The cookie holding the form's anti-forgery value.
    static let signInCookie = "cumulus_signin"

    /// The origin (`scheme://host[:port]`) of ``publicURL``, if one is set.
    var publicOrigin: String? {
        guard let publicURL, let url = URL(string: publicURL), let scheme = url.scheme, let host = url.host else { return nil }
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// The absolute URL of the sign-in page for `request`, which needs a signed-in
    /// user: what a `421`'s `redirectURL` says. Its base is ``publicURL``; only a node
    /// given none (listening on every address, warned at start) falls back on the
    /// request's `Host`. It carries the container, the
    /// environment, the app's API token and the app's origin (its `Origin` header),
    /// which the page checks before it hands anyone a session.
    func signInURL(_ request: APIRequest, container: String, environment: DatabaseID.Environment) -> String {
        var items = [URLQueryItem(name: "container", value: container), URLQueryItem(name: "environment", value: environment.name)]
        if let token = request.query["ckAPIToken"] { items.append(URLQueryItem(name: "ckAPIToken", value: token)) }
        if let origin = request.headers["origin"], Self.isOrigin(origin) { items.append(URLQueryItem(name: "origin", value: origin)) }
        var components = URLComponents()
        components.queryItems = items
        // `+` means a space in a form-encoded query: encode it.
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return (publicURL ?? Self.origin(of: request)) + "/signin?" + query
    }

    /// Whether `text` is an origin in the normal form a browser sends
    /// (``CrossOrigin/normalizedOrigin(_:)``).
    static func isOrigin(_ text: String) -> Bool {
        text.utf8.count <= 256 && (try? CrossOrigin.normalizedOrigin(text)) == text
    }

    /// The sign-in request `fields` describe, checked: the API token opens the
    /// container environment, and the origin (if any) is one it may hand sessions to.
    /// A reason a person can read otherwise.
    func signInRequest(_ fields: [String: String]) throws -> SignInPage.Request {
        guard let container = fields["container"], !container.isEmpty, container.utf8.count <= 256,
            let environmentName = fields["environment"], let environment = DatabaseID.Environment(name: environmentName),
            let apiToken = fields["ckAPIToken"], !apiToken.isEmpty
        else {
            throw CumulusError(.invalidArguments, "this sign-in link is incomplete: open it from the app again")
        }
        guard let scope = try auth.scope(forAPIToken: apiToken), scope.opens(container, in: environment) else {
            throw CumulusError(.invalidArguments, "the app's API token does not open \(container) (\(environmentName))")
        }
        var origin = fields["origin"].flatMap { $0.isEmpty ? nil : $0 }
        if let given = origin {
            guard Self.isOrigin(given), try originMayReceiveSessions(given, apiToken: apiToken) else {
                throw CumulusError(
                    .invalidArguments,
                    "\(given) is not an origin this app's API token allows; its operator adds it with "
                        + "`cumulus tokens create --origin`")
            }
            origin = given
        }
        return SignInPage.Request(container: container, environment: environmentName, apiToken: apiToken, origin: origin)
    }

    /// Whether the page may `postMessage` a session to `origin`: one the app's API
    /// token allows (`cumulus tokens create --origin`, as CORS does), or this server's
    /// own (an app served beside it). Anyone may open the sign-in URL with any origin
    /// in it; only these ever receive a session.
    func originMayReceiveSessions(_ origin: String, apiToken: String) throws -> Bool {
        if origin == publicOrigin { return true }
        return try auth.scope(forAPIToken: apiToken)?.origins.contains(origin) ?? false
    }

    /// An HTML answer with the sign-in headers; `cookie` sets the anti-forgery value.
    private func html(_ text: String, status: Int = 200, nonce: String? = nil, cookie: String? = nil) -> APIResponse {
        var response = APIResponse(status: status, json: .null)
        response.text = text
        response.contentType = SignInPage.contentType
        response.headers = SignInPage.headers(nonce: nonce)
        if let cookie {
            let secure = publicURL?.hasPrefix("https:") == true ? "; Secure" : ""
            response.headers["set-cookie"] =
                "\(Self.signInCookie)=\(cookie); Path=/signin; Max-Age=1800; HttpOnly; SameSite=Strict\(secure)"
        }
        return response
    }

    /// `GET /signin`: the form.
    func signInForm(_ request: APIRequest) -> APIResponse {
        do {
            let signIn = try signInRequest(request.query)
            let csrf = AuthStore.randomHex(16)
            return html(SignInPage.form(signIn, csrf: csrf), cookie: csrf)
        } catch {
            return refusal(error, of: request)
        }
    }

    /// The page for a sign-in request that does not check out, charged to its
    /// address as failed credentials are: the page must not be a faster way to try
    /// API tokens than the API.
    private func refusal(_ error: any Error, of request: APIRequest) -> APIResponse {
        do {
            try chargeAddress(of: request)
        } catch {
            return html(SignInPage.failure("Too many requests from this address; try again shortly."), status: 429)
        }
        return html(SignInPage.failure(Self.reason(error)), status: 400)
    }

    /// `POST /signin`: checks the form, then the credential; on success the page that
    /// hands the session to the app.
    func signIn(_ request: APIRequest) async -> APIResponse {
        let fields = Self.formFields(request.body)
        let signIn: SignInPage.Request
        do {
            signIn = try signInRequest(fields)
        } catch {
            return refusal(error, of: request)
        }
        // Cross-site: a POST this server's own form did not make is refused outright.
        let cookie = Self.cookie(Self.signInCookie, in: request.headers["cookie"])
        let sentOrigin = request.headers["origin"]
        guard let cookie, let csrf = fields["csrf"], ConstantTime.equal(Array(cookie.utf8), Array(csrf.utf8)),
            sentOrigin == nil || sentOrigin == "null" && publicOrigin == nil || sentOrigin == publicOrigin
        else {
            return html(SignInPage.failure("this sign-in form expired or was sent from another site; open it again"), status: 403)
        }
        let user = (fields["user"] ?? "").trimmingCharacters(in: .whitespaces)
        let retry = { (reason: String, status: Int) -> APIResponse in
            let fresh = AuthStore.randomHex(16)
            return self.html(SignInPage.form(signIn, csrf: fresh, error: reason, user: user), status: status, cookie: fresh)
        }
        guard !user.isEmpty, user.utf8.count <= 255 else { return retry("Enter your user name.", 400) }
        if let wait = signInGuard.admit(user: user, address: signInGuard.clientAddress(of: request)) {
            metrics?.recordLimitHit(.signInAttempts)
            return retry("Too many attempts. Try again in \(max(1, wait.components.seconds)) s.", 429)
        }
        guard leads else {
            return retry("This server does not sign users in (it follows another); use the leader's address.", 503)
        }
        do {
            var valid = false
            if let code = fields["code"], !code.isEmpty {
                if let linked = try auth.redeemSignInLink(code) {
                    valid = linked.user == user && linked.container == signIn.container
                }
            } else if let password = fields["password"], !password.isEmpty {
                valid = try auth.checkPassword(password, for: user)
            }
            guard valid else { return retry("The user name, password or code is not right.", 401) }
            let session = try auth.createWebAuthToken(
                for: user, container: signIn.container, session: fields["keep"] == "1" ? .kept : .idle)
            let nonce = AuthStore.randomHex(16)
            return html(SignInPage.signedIn(session: session, origin: signIn.origin, nonce: nonce), nonce: nonce)
        } catch {
            return retry(Self.reason(error), 500)
        }
    }

    /// `POST /signout?ckWebAuthToken=…` (or the token as a form field): revokes the
    /// token, and with it every `webcourierURL` made with it. Holding the token is
    /// the right to end it; the request counts against its address's rate.
    func signOut(_ request: APIRequest) throws -> APIResponse {
        try chargeAddress(of: request)
        guard let token = request.query["ckWebAuthToken"] ?? Self.formFields(request.body)["ckWebAuthToken"], !token.isEmpty
        else {
            throw CumulusError(.invalidArguments, "sign out of which session? send ckWebAuthToken")
        }
        return APIResponse(json: ["signedOut": .bool(try auth.revokeWebAuthToken(token))])
    }

    /// What a person is told of `error`.
    static func reason(_ error: any Error) -> String {
        (error as? CumulusError)?.message ?? "the server could not sign you in; try again"
    }

    /// The fields of an `application/x-www-form-urlencoded` body (the last of a
    /// repeated name wins; at most 64 fields of 4 KiB each are read).
    static func formFields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).prefix(64) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ bytes: ArraySlice<UInt8>) -> String? {
                guard bytes.count <= 4_096 else { return nil }
                let spaced = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding
            }
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : []) else { continue }
            fields[name] = value
        }
        return fields
    }

    /// The value of cookie `name` in a `Cookie` header.
    static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}
