import AsyncHTTPClient
import CumulusModel
import CumulusReplication
import Foundation
import NIOCore
import NIOHTTP1

/// A small HTTP client for multi-process tests.
enum TestHTTP {
    static let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)

    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
    }

    static func request(
        _ url: String, method: HTTPMethod = .GET, body: [String: Any]? = nil, headers: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name.lowercased()] = header.value }
        return Answer(status: Int(response.status.code), headers: fields, body: Array(bytes.readableBytesView))
    }

    /// What an operator sends for `/healthz`'s detail and `/metrics`.
    static let operatorHeaders = ["Authorization": "Bearer \(NodeProcess.metricsToken)"]

    /// Polls `url`'s `/healthz` until it answers; the log head it reports.
    @discardableResult
    static func waitUntilUp(_ url: String, timeout: Duration = .seconds(60)) async throws -> UInt64 {
        let deadline = ContinuousClock.now + timeout
        // Asked once more after the deadline: this task may wake from its sleep late.
        while true {
            if let answer = try? await request(url + "/healthz", headers: operatorHeaders, timeout: .seconds(2)),
                answer.status == 200
            {
                return UInt64(answer.json["logHead"] as? Int ?? 0)
            }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(url) did not come up within \(timeout)")
    }

    /// The head `/healthz` reports, or `nil` if the node does not answer.
    static func head(_ url: String) async -> UInt64? {
        guard let answer = try? await request(url + "/healthz", headers: operatorHeaders, timeout: .seconds(2)),
            answer.status == 200
        else { return nil }
        return (answer.json["logHead"] as? Int).map(UInt64.init)
    }

    /// POSTs `body` to a node that may be behind the leader (a follower) and must
    /// answer as of commit `minSequence` when given (the `X-Cumulus-Sequence` of the
    /// leader's answer to the write the caller wants to see): with
    /// `X-Cumulus-Min-Sequence` and a long wait, and again while the node answers
    /// `TRY_AGAIN_LATER` (not there yet, or behind a change token), until `timeout`.
    /// The last answer, which the caller checks.
    static func readWhenCaughtUp(
        _ url: String, body: [String: Any], minSequence: String? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Answer {
        let deadline = ContinuousClock.now + timeout
        var headers = ["X-Cumulus-Max-Wait-Ms": "20000"]
        if let minSequence { headers["X-Cumulus-Min-Sequence"] = minSequence }
        while true {
            let answer = try await request(url, method: .POST, body: body, headers: headers, timeout: .seconds(40))
            let notYet = answer.status == 503 && answer.json["serverErrorCode"] as? String == "TRY_AGAIN_LATER"
            guard notYet, ContinuousClock.now < deadline else { return answer }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The headers of a replication session with the node at `url`, after a handshake
    /// in which it proved `secret` (as a follower's ``LeaderClient`` does).
    static func replicationHeaders(_ url: String, secret: String = Cluster.secret) async throws -> [String: String] {
        let initiator = ReplicationHandshake.Initiator(secret: secret)
        let answer = try await request(
            url + "/replication/handshake?nonce=\(Hex.encode(initiator.nonce))", method: .POST, timeout: .seconds(5))
        guard answer.status == 200, let nonce = (answer.json["nonce"] as? String).flatMap(Hex.decode),
            let proof = (answer.json["proof"] as? String).flatMap(Hex.decode)
        else { throw TestFailure("\(url) answered the handshake \(answer.status) \(answer.text)") }
        return try initiator.finish(responderNonce: nonce, responderProof: proof).headers
    }

    /// `GET url + path` in a replication session proving `secret`.
    static func replicationGET(_ url: String, _ path: String, secret: String = Cluster.secret, timeout: Duration = .seconds(5))
        async throws -> Answer
    {
        try await request(url + path, headers: try await replicationHeaders(url, secret: secret), timeout: timeout)
    }

    /// A follower's replication state (`connecting`, `streaming`, `retrying`,
    /// `stopped`) from its `/replication/status`, or `nil` if it does not answer.
    static func followerState(_ url: String, secret: String = Cluster.secret) async -> String? {
        let answer = try? await replicationGET(url, "/replication/status", secret: secret)
        guard let answer, answer.status == 200 else { return nil }
        return (answer.json["following"] as? [String: Any])?["state"] as? String
    }

    /// Polls until `url`'s head reaches `sequence`.
    static func waitForHead(_ url: String, atLeast sequence: UInt64, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        var last: UInt64?
        while true {
            last = await head(url)
            if let last, last >= sequence { return }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("\(url) reached \(last.map(String.init) ?? "nothing"), not \(sequence), within \(timeout)")
    }
}

/// Polls `condition` every 50 ms until it holds; after `timeout` fails with a
/// ``TestFailure`` saying what was awaited (`what` is evaluated then, so it can report
/// the last state seen). Process tests wait for conditions like this, never for time.
func waitUntil(
    _ what: @autoclosure () -> String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("waited \(timeout) for \(what())") }
        try await Task.sleep(for: .milliseconds(50))
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
