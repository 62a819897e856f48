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

    static func request(_ path: String, method: String = "GET", query: [String: String] = [:], secret: String? = secret)
        -> APIRequest
    {
        APIRequest(
            method: method, path: path, query: query,
            headers: secret.map { [ReplicationLeader.secretHeader: $0] } ?? [:])
    }

    @Test("no secret or a wrong one is refused with 403; the right one opens hello")
    func secretChecked() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        let endpoints = ReplicationEndpoints(
            container: container, secret: Self.secret,
            leader: ReplicationLeader(container: container, logger: Logger(label: "t")), follower: nil)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/hello", secret: nil))) == 403)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/hello", secret: "s3creT"))) == 403)
        let hello = await endpoints.answer(Self.request("/replication/hello"))
        guard case .json(200, let bytes) = hello else {
            Issue.record("hello failed")
            return
        }
        let decoded = try JSONDecoder().decode(ReplicationHello.self, from: Data(bytes))
        #expect(decoded.identity == container.store.identity)
        container.close()
    }

    @Test("malformed stream and ack parameters are 400, unknown endpoints 404")
    func malformed() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        let endpoints = ReplicationEndpoints(
            container: container, secret: Self.secret,
            leader: ReplicationLeader(container: container, logger: Logger(label: "t")), follower: nil)
        let good: [String: String] = [
            "follower": "f", "logID": Hex.encode(container.store.logID), "epoch": "1", "after": "0",
            "hash": Hex.encode(LogHead.genesisHash),
        ]
        for (key, bad) in [("logID", "zz"), ("epoch", "0"), ("after", "-1"), ("hash", "00"), ("follower", ""),
                           ("follower", String(repeating: "x", count: 200)), ("logID", String(repeating: "a", count: 30))]
        {
            var query = good
            query[key] = bad
            let answer = await endpoints.answer(Self.request("/replication/stream", query: query))
            #expect(Self.status(of: answer) == 400, "\(key)=\(bad)")
        }
        var missing = good
        missing["hash"] = nil
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/stream", query: missing))) == 400)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/ack", method: "POST", query: ["follower": "f", "applied": "x"]))) == 400)
        #expect(Self.status(of: await endpoints.answer(Self.request("/replication/nothing"))) == 404)
        // A well-formed request whose history is not the leader's: 409, naming why.
        var ahead = good
        ahead["after"] = "5"
        let diverged = await endpoints.answer(Self.request("/replication/stream", query: ahead))
        #expect(Self.status(of: diverged) == 409)
        #expect(Self.reason(of: diverged).contains("re-seed"))
        container.close()
    }

    @Test("a follower does not serve the leader's endpoints")
    func followerServesNoStream() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        let follower = try ReplicationWorld.follower(of: leader)
        let endpoints = ReplicationEndpoints(container: follower, secret: Self.secret, leader: nil, follower: nil)
        let answer = await endpoints.answer(Self.request("/replication/snapshot"))
        #expect(Self.status(of: answer) == 503)
        #expect(Self.reason(of: answer).contains("not a leader"))
        leader.close()
        follower.close()
    }
}
