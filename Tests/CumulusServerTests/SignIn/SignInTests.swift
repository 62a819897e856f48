import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Browser sign-in (issue 41, item 3) through a live socket, as CloudKit JS and a
/// browser drive it: the 421 names the page, the page's form carries an anti-forgery
/// cookie, a right password hands a session to the app's origin only, and guessing,
/// forged posts and unknown origins get nowhere.
@Suite("Browser sign-in")
struct SignInTests {
    static let publicURL = "https://cloud.example"
    static let app = "https://app.example.com"
    static let password = "correct horse battery"

    /// An answer: status, headers and the body as text.
    struct Page {
        let status: Int
        let headers: HTTPFields
        let text: String

        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
        /// The value of the form's hidden field `name`.
        func field(_ name: String) -> String? {
            guard let start = text.range(of: #"name="\#(name)" value=""#) else { return nil }
            return String(text[start.upperBound...].prefix { $0 != "\"" })
        }
        /// The anti-forgery cookie the answer sets.
        var cookie: String? {
            header("Set-Cookie")?.split(separator: ";").first.map(String.init)
        }
        /// The session the page hands to the app, if it does.
        var session: String? {
            guard let start = text.range(of: "ckSession: \"") else { return nil }
            return String(text[start.upperBound...].prefix { $0 != "\"" })
        }
    }

    struct Browser {
        let client: LiveClient
        let apiToken: String

        func send(_ method: HTTPRequest.Method, _ uri: String, headers: [String: String] = [:], body: String? = nil)
            async throws -> Page
        {
            var fields = HTTPFields()
            for (name, value) in headers { if let field = HTTPField.Name(name) { fields[field] = value } }
            return try await client.execute(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(string: $0) }) {
                Page(status: Int($0.status.code), headers: $0.headers, text: String(buffer: $0.body))
            }
        }

        /// The sign-in form for the app at `origin`.
        func form(origin: String? = SignInTests.app) async throws -> Page {
            var query = "container=\(APIWorld.containerName)&environment=development&ckAPIToken=\(apiToken)"
            if let origin { query += "&origin=\(origin.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? origin)" }
            return try await send(.get, "/signin?\(query)")
        }

        /// Submits `form` with `fields` (user, password, code, keep), its cookie and
        /// this server's `Origin`, as the browser would.
        func submit(
            _ form: Page, _ fields: [String: String], cookie: String? = nil, origin: String = SignInTests.publicURL,
            forwardedFor: String? = nil
        ) async throws -> Page {
            var all = fields
            for name in ["container", "environment", "ckAPIToken", "origin", "csrf"] { all[name] = form.field(name) ?? "" }
            let body = all.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                .joined(separator: "&")
            var headers = ["Content-Type": "application/x-www-form-urlencoded", "Origin": origin]
            if let cookie = cookie ?? form.cookie { headers["Cookie"] = cookie }
            if let forwardedFor { headers["X-Forwarded-For"] = forwardedFor }
            return try await send(.post, "/signin", headers: headers, body: body)
        }

        /// `users/caller` with `session`: the user record name, or the error code.
        func caller(_ session: String, container: String = APIWorld.containerName) async throws -> String? {
            let page = try await send(
                .get, "/database/1/\(container)/development/public/users/caller?ckAPIToken=\(apiToken)&ckWebAuthToken=\(session)")
            let json = try JSONValue.parse(Data(page.text.utf8))
            return json["userRecordName"]?.stringValue ?? json["serverErrorCode"]?.stringValue
        }
    }

    /// A live server over a world whose API token allows ``app`` and whose Alice has
    /// ``password``.
    static func live(
        configure: (inout CloudKitAPI) -> Void = { _ in },
        _ body: @escaping @Sendable (APIWorld, Browser) async throws -> Void
    ) async throws {
        let world = try APIWorld()
        let token = try world.auth.createAPIToken(container: APIWorld.containerName, environment: .development, origins: [app])
        try world.auth.setPassword(password, for: world.alice, cost: .minimum)
        var api = world.operatorAPI(metrics: ServerMetrics())
        api.publicURL = publicURL
        configure(&api)
        let server = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        try await server.testLive { client in try await body(world, Browser(client: client, apiToken: token)) }
    }

    @Test("a 421 names the absolute sign-in page, with the container, environment, API token and the app's origin")
    func authenticationRequiredNamesThePage() async throws {
        try await Self.live { _, browser in
            let page = try await browser.send(
                .get, "/database/1/\(APIWorld.containerName)/development/public/users/caller?ckAPIToken=\(browser.apiToken)",
                headers: ["Origin": Self.app])
            #expect(page.status == 421)
            let json = try JSONValue.parse(Data(page.text.utf8))
            let url = try #require(json["redirectURL"]?.stringValue.flatMap(URLComponents.init(string:)), "\(json)")
            #expect(url.scheme == "https" && url.host == "cloud.example" && url.path == "/signin")
            let query = Dictionary(uniqueKeysWithValues: (url.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            #expect(query["container"] == APIWorld.containerName && query["environment"] == "development")
            #expect(query["ckAPIToken"] == browser.apiToken && query["origin"] == Self.app)
        }
    }

    @Test("the form sets an HttpOnly SameSite=Strict cookie and refuses framing and caching; an origin the token does not allow gets no form")
    func theFormIsGuarded() async throws {
        try await Self.live { _, browser in
            let form = try await browser.form()
            #expect(form.status == 200)
            #expect(form.header("Content-Type")?.hasPrefix("text/html") == true)
            let cookie = try #require(form.header("Set-Cookie"))
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Secure"), "\(cookie)")
            #expect(form.cookie == "\(CloudKitAPI.signInCookie)=\(form.field("csrf") ?? "-")")
            #expect(form.header("X-Frame-Options") == "DENY")
            #expect(form.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
            #expect(form.header("Cache-Control") == "no-store")
            #expect(form.text.contains(Self.app))

            let elsewhere = try await browser.form(origin: "https://evil.example.net")
            #expect(elsewhere.status == 400 && elsewhere.field("csrf") == nil, "\(elsewhere.text)")
            #expect(elsewhere.text.contains("tokens create --origin"))
        }
    }

    @Test("a sign-in URL with a wrong API token is charged to its address: the page is no faster a way to try tokens than the API")
    func badTokensAreCharged() async throws {
        try await Self.live(configure: { $0.limits.requestsPerAddress = RequestRate(perSecond: 1.0 / 3_600, burst: 2) }) { _, browser in
            let guess = "/signin?container=\(APIWorld.containerName)&environment=development&ckAPIToken="
            #expect(try await browser.send(.get, guess + "aa").status == 400)
            #expect(try await browser.send(.get, guess + "bb").status == 400)
            let third = try await browser.send(.get, guess + "cc")
            #expect(third.status == 429 && third.text.contains("Too many requests"), "\(third.status)")
            // A right token is not charged.
            #expect(try await browser.form().status == 200)
        }
    }

    @Test("the right password hands a session bound to the container to the app's origin only; a wrong one, or an unknown user, is told the same")
    func aPasswordSignsIn() async throws {
        try await Self.live { world, browser in
            let form = try await browser.form()
            let wrong = try await browser.submit(form, ["user": world.alice, "password": "wrong password"])
            #expect(wrong.status == 401 && wrong.session == nil)
            let unknown = try await browser.submit(form, ["user": "_nobody", "password": Self.password])
            #expect(unknown.status == 401 && unknown.session == nil)
            let message = "The user name, password or code is not right."
            #expect(wrong.text.contains(message) && unknown.text.contains(message))

            let fresh = try await browser.form()
            let signedIn = try await browser.submit(fresh, ["user": world.alice, "password": Self.password])
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let session = try #require(signedIn.session, "\(signedIn.text)")
            #expect(signedIn.text.contains("var origin = \"\(Self.app)\";"), "\(signedIn.text)")
            #expect(signedIn.text.contains("postMessage({ ckSession: \"\(session)\" }, origin)"), "\(signedIn.text)")
            let nonce = try #require(signedIn.header("Content-Security-Policy")?.split(separator: "'").first { $0.hasPrefix("nonce-") })
            #expect(signedIn.text.contains("<script nonce=\"\(nonce.dropFirst("nonce-".count))\">"), "the script runs by the answer's nonce")
            #expect(try await browser.caller(session) == world.alice)
            // Bound to its container, as every web auth token is.
            #expect(try await browser.caller(session, container: "iCloud.com.example.other") != world.alice)
            // An idle session: it expires 30 minutes after its last use.
            #expect(try world.auth.user(forWebAuthToken: session, container: APIWorld.containerName, now: Timestamp.now().adding(minutes: 31)) == nil)
        }
    }

    @Test("a post without the form's cookie, or from another site, is refused before any credential is checked")
    func forgedPostsAreRefused() async throws {
        try await Self.live { world, browser in
            let form = try await browser.form()
            let noCookie = try await browser.submit(form, ["user": world.alice, "password": Self.password], cookie: "other=1")
            #expect(noCookie.status == 403 && noCookie.session == nil)
            let crossSite = try await browser.submit(
                form, ["user": world.alice, "password": Self.password], origin: "https://evil.example.net")
            #expect(crossSite.status == 403 && crossSite.session == nil)
        }
    }

    @Test("a one-time code signs its user in once; used again, or by another user, it does not")
    func aCodeSignsInOnce() async throws {
        try await Self.live { world, browser in
            let code = try world.auth.createSignInLink(for: world.bob, container: APIWorld.containerName)
            let stolen = try await browser.submit(try await browser.form(), ["user": world.alice, "code": code])
            #expect(stolen.status == 401 && stolen.session == nil, "a code is its own user's, and is spent by a wrong try")
            let again = try world.auth.createSignInLink(for: world.bob, container: APIWorld.containerName)
            let signedIn = try await browser.submit(try await browser.form(), ["user": world.bob, "code": again, "keep": "1"])
            let session = try #require(signedIn.session, "\(signedIn.text)")
            #expect(try await browser.caller(session) == world.bob)
            // Kept: it outlives 30 idle minutes, not two weeks.
            let later = Timestamp.now()
            #expect(try world.auth.user(forWebAuthToken: session, container: APIWorld.containerName, now: later.adding(minutes: 60)) == world.bob)
            #expect(try world.auth.user(forWebAuthToken: session, container: APIWorld.containerName, now: later.adding(minutes: 15 * 24 * 60)) == nil)
            let reused = try await browser.submit(try await browser.form(), ["user": world.bob, "code": again])
            #expect(reused.status == 401 && reused.session == nil)
        }
    }

    @Test("guesses are THROTTLED per user and per address; X-Forwarded-For names the client only from a trusted proxy")
    func guessingIsThrottled() async throws {
        try await Self.live(configure: {
            $0.limits.signInAttemptsPerUser = RequestRate(perSecond: 1.0 / 3_600, burst: 2)
            $0.limits.signInAttemptsPerAddress = RequestRate(perSecond: 1.0 / 3_600, burst: 4)
        }) { world, browser in
            let form = try await browser.form()
            for _ in 0..<2 { #expect(try await browser.submit(form, ["user": world.alice, "password": "guess"]).status == 401) }
            let third = try await browser.submit(form, ["user": world.alice, "password": Self.password])
            #expect(third.status == 429 && third.session == nil, "even the right password waits: \(third.status)")
            #expect(third.text.contains("Too many attempts"))
            #expect(try await SlowClientTests.hits(.signInAttempts, port: try #require(browser.client.port)) == 1)
            // The address: every attempt spent one of its 4 (the refused one too), and a
            // header naming other clients changes nothing from an untrusted peer.
            #expect(try await browser.submit(form, ["user": world.bob, "password": "guess"], forwardedFor: "198.51.100.1").status == 401)
            #expect(try await browser.submit(form, ["user": "_carol", "password": "guess"], forwardedFor: "198.51.100.2").status == 429)
        }
        try await Self.live(configure: {
            $0.limits.signInAttemptsPerAddress = RequestRate(perSecond: 1.0 / 3_600, burst: 1)
            $0.limits.trustedProxies = ["127.0.0.1"]
        }) { world, browser in
            // Behind a trusted proxy each client has its own bucket.
            let form = try await browser.form()
            for client in ["198.51.100.1", "198.51.100.2"] {
                let answer = try await browser.submit(form, ["user": world.alice, "password": "guess"], forwardedFor: client)
                #expect(answer.status == 401, "\(client): \(answer.status)")
            }
            let again = try await browser.submit(form, ["user": world.bob, "password": "guess"], forwardedFor: "198.51.100.1")
            #expect(again.status == 429)
        }
    }

    @Test("sign-out revokes the session: users/caller and its webcourierURL stop working")
    func signOutRevokes() async throws {
        try await Self.live { world, browser in
            let signedIn = try await browser.submit(try await browser.form(), ["user": world.alice, "password": Self.password])
            let session = try #require(signedIn.session)
            let created = try await browser.send(
                .post,
                "/device/1/\(APIWorld.containerName)/development/tokens/create?ckAPIToken=\(browser.apiToken)&ckWebAuthToken=\(session)",
                body: "{}")
            let url = try #require(try JSONValue.parse(Data(created.text.utf8))["webcourierURL"]?.stringValue)
            let signOut = try await browser.send(.post, "/signout?ckWebAuthToken=\(session)")
            #expect(signOut.status == 200 && signOut.text.contains("\"signedOut\":true"), "\(signOut.text)")
            #expect(try await browser.caller(session) == "AUTHENTICATION_FAILED")
            let courier = try await browser.send(.get, String(url.dropFirst(Self.publicURL.count)))
            #expect(courier.status == 401)
        }
    }
}

extension Timestamp {
    func adding(minutes: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: millisecondsSince1970 + minutes * 60_000)
    }
}
