import CumulusModel
@testable import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// The web console through a live socket: its page and files come from the binary with
/// guarding headers; a user signs in with a password into an HttpOnly, SameSite=Strict
/// cookie; only an operator reads the node's pages; a write without the session's CSRF
/// token, a sign-in from another site, a wrong password and no session at all get nowhere.
@Suite("Web console")
struct ConsoleTests {
    static let password = "correct horse battery"

    struct Browser {
        let client: LiveClient

        func send(_ method: HTTPRequest.Method, _ uri: String, headers: [String: String] = [:], body: String? = nil)
            async throws -> LiveExchange
        {
            try await LiveExchange.send(client, method, uri, headers: headers, body: body)
        }

        /// Signs `user` in with `password`; the answer and the session's cookie.
        func signIn(_ user: String, _ password: String = ConsoleTests.password, origin: String? = nil) async throws
            -> LiveExchange
        {
            var headers = ["Content-Type": "application/json"]
            if let origin { headers["Origin"] = origin }
            let body = try String(decoding: JSONEncoder().encode(["user": user, "password": password]), as: UTF8.self)
            return try await send(.post, "/console/session", headers: headers, body: body)
        }
    }

    /// The console's past states with no free space kept: a test machine's disk may be
    /// nearly full, and what a past state leaves is the subject of one test only.
    static let roomyTimeTravel = {
        var limits = ConsoleTimeTravel.Limits()
        limits.minimumFreeBytes = 0
        return limits
    }()

    /// A live server over a world whose Alice is an operator and Bob is not, both with
    /// ``password``; the console on unless `console` is false.
    static func live(
        console: Bool = true, timeTravel: ConsoleTimeTravel.Limits = ConsoleTests.roomyTimeTravel,
        _ body: @escaping @Sendable (APIWorld, Browser) async throws -> Void
    ) async throws {
        let world = try APIWorld()
        _ = try world.auth.addUser(name: world.alice, operator: true)
        try world.auth.setPassword(password, for: world.alice, cost: .minimum)
        try world.auth.setPassword(password, for: world.bob, cost: .minimum)
        var api = world.operatorAPI(metrics: ServerMetrics())
        if console {
            api.consoleSessions = ConsoleSessions()
            api.consoleTimeTravel = ConsoleTimeTravel(source: world.container, limits: timeTravel)
            api.consoleJobs = ConsoleJobs(dataPath: world.path)
        }
        let server = CumulusHTTPServer.application(api: api, port: 0, logger: Logger(label: "test"))
        try await server.testLive { client in try await body(world, Browser(client: client)) }
    }

    @Test("the page, its script and its styles come from the binary, guarded against framing, caching and sniffing")
    func filesAreServed() async throws {
        try await Self.live { _, browser in
            let page = try await browser.send(.get, "/console")
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(page.text.contains("/console/assets/console.js"))
            #expect(page.header("Content-Security-Policy")?.contains("script-src 'self'") == true)
            #expect(page.header("X-Frame-Options") == "DENY" && page.header("Cache-Control") == "no-store")
            let script = try await browser.send(.get, "/console/assets/console.js")
            #expect(script.status == 200 && script.header("Content-Type")?.hasPrefix("text/javascript") == true)
            #expect(script.text.contains("./support.js"))
            // The modules it imports: what sends the CSRF token, and the records pages.
            let support = try await browser.send(.get, "/console/assets/support.js")
            #expect(support.status == 200 && support.text.contains("X-Cumulus-CSRF"))
            let records = try await browser.send(.get, "/console/assets/records.js")
            #expect(records.status == 200 && records.header("Content-Type")?.hasPrefix("text/javascript") == true)
            let styles = try await browser.send(.get, "/console/assets/console.css")
            #expect(styles.status == 200 && styles.header("Content-Type")?.hasPrefix("text/css") == true)
            #expect(try await browser.send(.get, "/console/assets/../Package.swift").status == 404)
            #expect(try await browser.send(.get, "/console/assets/secret.txt").status == 404)
            #expect(try await browser.send(.post, "/console").status == 404, "the page takes GET only")
        }
    }

    @Test("a node started without the console answers 404 on every console path")
    func offUnlessAsked() async throws {
        try await Self.live(console: false) { _, browser in
            for path in ["/console", "/console/assets/console.js", "/console/session", "/console/api/node"] {
                let status = try await browser.send(.get, path).status
                #expect(status == 404, "\(path)")
            }
        }
    }

    @Test("an operator signs in to an HttpOnly SameSite=Strict cookie and reads the node; signing out needs the CSRF token and ends the session")
    func operatorSession() async throws {
        try await Self.live { world, browser in
            #expect(try await browser.send(.get, "/console/api/node").status == 401, "no session")
            let signedIn = try await browser.signIn(world.alice)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let setCookie = try #require(signedIn.header("Set-Cookie"))
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Path=/console"))
            #expect(signedIn.json?["user"]?.stringValue == world.alice && signedIn.json?["operator"] == .bool(true))
            let csrf = try #require(signedIn.json?["csrf"]?.stringValue)
            let cookie = try #require(signedIn.cookie)
            #expect(!signedIn.text.contains(String(cookie.dropFirst(ConsoleSessions.cookie.count + 1))), "the session token is in the cookie only")

            let me = try await browser.send(.get, "/console/session", headers: ["Cookie": cookie])
            #expect(me.status == 200 && me.json?["user"]?.stringValue == world.alice)
            let node = try await browser.send(.get, "/console/api/node", headers: ["Cookie": cookie])
            #expect(node.status == 200, "\(node.text)")
            #expect(node.json?["role"]?.stringValue == "leader")
            #expect(node.json?["head"]?.int64Value == Int64(world.container.store.head.sequence))

            // Signing out is a write: without the CSRF token, or with another, refused.
            #expect(try await browser.send(.delete, "/console/session", headers: ["Cookie": cookie]).status == 403)
            // Another token of the same length: its first digit changed (whatever it was).
            let other = (csrf.first == "0" ? "1" : "0") + csrf.dropFirst()
            let forgedCSRF = try await browser.send(.delete, "/console/session", headers: ["Cookie": cookie, "X-Cumulus-CSRF": other])
            #expect(forgedCSRF.status == 403)
            #expect(try await browser.send(.get, "/console/api/node", headers: ["Cookie": cookie]).status == 200, "still signed in")
            let out = try await browser.send(.delete, "/console/session", headers: ["Cookie": cookie, "X-Cumulus-CSRF": csrf])
            #expect(out.status == 200 && out.header("Set-Cookie")?.contains("Max-Age=0") == true)
            #expect(try await browser.send(.get, "/console/api/node", headers: ["Cookie": cookie]).status == 401, "ended")
        }
    }

    @Test("a user who is not an operator signs in but is refused the node's pages")
    func userIsNoOperator() async throws {
        try await Self.live { world, browser in
            let signedIn = try await browser.signIn(world.bob)
            #expect(signedIn.status == 200 && signedIn.json?["operator"] == .bool(false))
            let cookie = try #require(signedIn.cookie)
            let node = try await browser.send(.get, "/console/api/node", headers: ["Cookie": cookie])
            #expect(node.status == 403 && node.json?["serverErrorCode"]?.stringValue == "ACCESS_DENIED", "\(node.text)")
        }
    }

    @Test("a wrong password, a sign-in posted from another site, a malformed body and a forged cookie get no session")
    func refusals() async throws {
        try await Self.live { world, browser in
            let wrong = try await browser.signIn(world.alice, "not the password")
            #expect(wrong.status == 401 && wrong.header("Set-Cookie") == nil)
            let elsewhere = try await browser.signIn(world.alice, origin: "https://evil.example.net")
            #expect(elsewhere.status == 403 && elsewhere.header("Set-Cookie") == nil)
            // The page's own origin, the one the request was sent to, signs in.
            let own = try await browser.signIn(world.alice, origin: "http://localhost")
            #expect(own.status == 200, "\(own.text)")
            let malformed = try await browser.send(.post, "/console/session", headers: ["Content-Type": "application/json"], body: "{\"user\": 1}")
            #expect(malformed.status == 400)
            let forged = try await browser.send(.get, "/console/api/node", headers: ["Cookie": "\(ConsoleSessions.cookie)=\(AuthStore.randomHex(32))"])
            #expect(forged.status == 401)
        }
    }

    @Test("guessing passwords is throttled as on the sign-in page")
    func guessingIsThrottled() async throws {
        try await Self.live { world, browser in
            var statuses: [Int] = []
            for _ in 0..<12 {
                let answer = try await browser.signIn(world.alice, "guess")
                statuses.append(Int(answer.status.code))
            }
            #expect(statuses.contains(429), "\(statuses)")
            #expect(statuses.allSatisfy { $0 == 401 || $0 == 429 })
        }
    }

    @Test("the live log streams each event as its audit line, filtered; a commit's last event carries its sequence, from which a stream resumes; only operators open it")
    func liveLog() async throws {
        let world = try APIWorld()
        var api = world.operatorAPI(metrics: ServerMetrics())
        let sessions = ConsoleSessions()
        api.consoleSessions = sessions
        let (token, _) = sessions.start(user: world.alice, isOperator: true)
        func request(_ query: [String: String] = [:], lastEventID: String? = nil, token: String? = token) -> APIRequest {
            var headers: [String: String] = [:]
            if let token { headers["cookie"] = "\(ConsoleSessions.cookie)=\(token)" }
            if let lastEventID { headers["last-event-id"] = lastEventID }
            return APIRequest(method: "GET", path: "/console/api/log/stream", query: query, headers: headers)
        }
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
        for name in ["a", "b"] {
            _ = try await world.post(
                "records/modify",
                #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Item","fields":{"title":{"value":"x"}}}}]}"#)
        }
        /// The events of `stream` until one names `record`: their (id, audit line) pairs.
        func read(_ stream: AsyncThrowingStream<String, Error>, until record: String) async throws -> [(id: String?, entry: JSONValue)] {
            var seen: [(id: String?, entry: JSONValue)] = []
            for try await event in stream {
                guard let data = event.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { continue }
                let id = event.split(separator: "\n").first(where: { $0.hasPrefix("id: ") }).map { String($0.dropFirst(4)) }
                let entry = try JSONValue.parse(Data(data.dropFirst(6).utf8))
                seen.append((id, entry))
                if entry["recordID"]?.stringValue == record { break }
            }
            return seen
        }
        let all = try await read(try api.consoleLogEvents(request()), until: "b")
        let records = all.compactMap { $0.entry["recordID"]?.stringValue }
        #expect(records.suffix(2) == ["a", "b"], "\(records)")
        #expect(all.contains { $0.entry["operation"]?.stringValue == "zoneSaved" })
        let last = try #require(all.last)
        #expect(last.id == last.entry["sequence"]?.int64Value.map(String.init), "a commit's last event carries its sequence")
        // Filtered to one record, and resumed after the commit that saved `a`.
        let onlyB = try await read(try api.consoleLogEvents(request(["record": "b"])), until: "b")
        #expect(onlyB.map { $0.entry["recordID"]?.stringValue } == ["b"])
        let saveOfA = try #require(all.first { $0.entry["recordID"]?.stringValue == "a" }?.id)
        let resumed = try await read(try api.consoleLogEvents(request(lastEventID: saveOfA)), until: "b")
        #expect(resumed.map { $0.entry["recordID"]?.stringValue } == ["b"])

        // Only an operator's session opens it.
        #expect(throws: (any Error).self) { try api.consoleLogEvents(request(token: nil)) }
        let (userToken, _) = sessions.start(user: world.bob, isOperator: false)
        #expect(CloudKitAPI.errorResponse(try #require(catching(try api.consoleLogEvents(request(token: userToken))))).status == 403)
        #expect(CloudKitAPI.errorResponse(try #require(catching(try api.consoleLogEvents(request(token: nil))))).status == 401)
    }

    /// The error `body` throws, or `nil`.
    func catching(_ body: @autoclosure () throws -> some Any) -> (any Error)? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test("a record's timeline, as cumulus history reads it, for operators only; an unknown record is said so")
    func history() async throws {
        try await Self.live { world, browser in
            _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
            _ = try await world.post(
                "records/modify",
                #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"r","recordType":"Item","fields":{"title":{"value":"one"}}}}]}"#)
            _ = try await world.post(
                "records/modify",
                #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"r","recordType":"Item","fields":{"title":{"value":"two"}}}}]}"#)
            let cookie = try #require(try await browser.signIn(world.alice).cookie)
            let answer = try await browser.send(.get, "/console/api/history?record=r&zone=Lists", headers: ["Cookie": cookie])
            #expect(answer.status == 200, "\(answer.text)")
            let versions = answer.json?["versions"]?.arrayValue ?? []
            #expect(versions.map { $0["kind"]?.stringValue } == ["created", "updated"])
            #expect(versions.last?["changes"]?.arrayValue?.first?.stringValue == #"title: "one" → "two""#)
            #expect(answer.json?["exists"] == .bool(true))
            let unknown = try await browser.send(.get, "/console/api/history?record=nobody", headers: ["Cookie": cookie])
            #expect(unknown.status == 404, "\(unknown.text)")
            let user = try #require(try await browser.signIn(world.bob).cookie)
            #expect(try await browser.send(.get, "/console/api/history?record=r", headers: ["Cookie": user]).status == 403)
        }
    }
}
