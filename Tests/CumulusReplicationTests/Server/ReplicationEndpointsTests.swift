import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import Foundation
import Logging
import Testing

@testable import CumulusReplication

/// Hostile and malformed requests to `/replication/*` get clear refusals.
@Suite("Replication endpoints")
struct ReplicationEndpointsTests {
    static let secret = "s3cret"

    static func status(of answer: ReplicationEndpoints.Answer) -> Int {
        switch answer {
        case .json(let status, _): status
        default: 200
        }
    }

    static func reason(of answer: ReplicationEndpoints.Answer) -> String {
        guard case .json(_, let bytes) = answer else { return "" }
        return (try? JSONDecoder().decode([String: String].self, from: Data(bytes)))?["reason"] ?? ""
    }

    static func request(
        _ path: String, method: String = "GET", query: [String: String] = [:], headers: [String: String] = [:]
    ) -> APIRequest {
        APIRequest(method: method, path: path, query: query, headers: headers)
    }

    @Test("without a session 401, with a proof made from another secret 403, the secret itself opens nothing")
    func sessionRequired() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        let leader = ReplicationLeader(container: container, logger: Logger(label: "t"))
        let endpoints = ReplicationEndpoints(node: leader.node, secret: Self.secret, leader: leader, follower: nil)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/hello"))) == 401)
        // The header older nodes sent, with the right secret in it, is no key any more.
        let old = Self.request("/replication/hello", headers: ["x-cumulus-replication-secret": Self.secret])
        #expect(Self.status(of: await endpoints.answer(old)) == 401)
        // A caller holding another secret shakes hands (it cannot check the node's proof
        // and goes on anyway): its proof is wrong for the session.
        let nonce = ReplicationHandshake.nonce()
        let challenge = await endpoints.answer(
            Self.request("/replication/handshake", method: "POST", query: ["nonce": Hex.encode(nonce)]))
        guard case .json(200, let body) = challenge,
            let session = try JSONDecoder().decode([String: String].self, from: Data(body))["nonce"].flatMap(Hex.decode)
        else {
            Issue.record("the handshake failed: \(challenge)")
            return
        }
        let forged = ReplicationHandshake.Credentials(
            session: session,
            proof: ReplicationHandshake.proof(secret: "s3creT", role: .initiator, initiatorNonce: nonce, responderNonce: session))
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/hello", headers: forged.headers))) == 403)
        // Its own nonce as the session (it never asked for one) is unknown.
        let unknown = ReplicationHandshake.Credentials(session: nonce, proof: forged.proof)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/hello", headers: unknown.headers))) == 401)
        let hello = await endpoints.answer(
            Self.request("/replication/hello", headers: try await endpoints.sessionHeaders(secret: Self.secret)))
        guard case .json(200, let bytes) = hello else {
            Issue.record("hello failed")
            return
        }
        let decoded = try JSONDecoder().decode(ReplicationHello.self, from: Data(bytes))
        #expect(decoded.identity == container.store.identity)
        container.close()
    }

    @Test("a handshake is POST with a nonce of 64 hex digits; anything else is 400")
    func malformedHandshake() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        let endpoints = ReplicationEndpoints(
            node: ReplicationWorld.node(container), secret: Self.secret, leader: nil, follower: nil)
        let good = Hex.encode(ReplicationHandshake.nonce())
        for (method, nonce) in [("GET", good), ("POST", "zz"), ("POST", String(good.dropLast(2))), ("POST", good + "00")] {
            let answer = await endpoints.answer(Self.request("/replication/handshake", method: method, query: ["nonce": nonce]))
            #expect(Self.status(of: answer) == 400, "\(method) \(nonce)")
        }
        #expect(endpoints.sessions.count == 0)
        container.close()
    }

    @Test("malformed stream and ack parameters are 400, unknown endpoints 404")
    func malformed() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        let leader = ReplicationLeader(container: container, logger: Logger(label: "t"))
        let endpoints = ReplicationEndpoints(node: leader.node, secret: Self.secret, leader: leader, follower: nil)
        let session = try await endpoints.sessionHeaders(secret: Self.secret)
        let good: [String: String] = [
            "follower": "f", "logID": Hex.encode(container.store.logID), "epoch": "1", "after": "0",
            "hash": Hex.encode(LogHead.genesisHash),
        ]
        for (key, bad) in [("logID", "zz"), ("epoch", "0"), ("after", "-1"), ("hash", "00"), ("follower", ""),
                           ("follower", String(repeating: "x", count: 200)), ("logID", String(repeating: "a", count: 30))]
        {
            var query = good
            query[key] = bad
            let answer = await endpoints.answer(Self.request("/replication/stream", query: query, headers: session))
            #expect(Self.status(of: answer) == 400, "\(key)=\(bad)")
        }
        var missing = good
        missing["hash"] = nil
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/stream", query: missing, headers: session))) == 400)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/ack", method: "POST", query: ["follower": "f", "applied": "x"], headers: session))) == 400)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/nothing", headers: session))) == 404)
        // A well-formed request whose history is not the leader's: 409, naming why.
        var ahead = good
        ahead["after"] = "5"
        let diverged = await endpoints.answer(Self.request("/replication/stream", query: ahead, headers: session))
        #expect(Self.status(of: diverged) == 409)
        #expect(Self.reason(of: diverged).contains("re-seed"))
        container.close()
    }

    @Test("a follower does not serve the leader's endpoints")
    func followerServesNoStream() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        let follower = try ReplicationWorld.follower(of: leader)
        let endpoints = ReplicationEndpoints(
            node: ReplicationWorld.node(follower, .follower(leaderURL: ReplicationWorld.leaderURL)), secret: Self.secret,
            leader: nil, follower: nil)
        let session = try await endpoints.sessionHeaders(secret: Self.secret)
        let answer = await endpoints.answer(Self.request("/replication/snapshot", headers: session))
        #expect(Self.status(of: answer) == 503)
        #expect(Self.reason(of: answer).contains("not a leader"))
        leader.close()
        follower.close()
    }
}
