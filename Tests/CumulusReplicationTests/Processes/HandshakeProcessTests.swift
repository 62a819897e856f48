import CumulusModel
import Foundation
import Hummingbird
import Synchronization
import Testing

@testable import CumulusReplication

/// The replication secret between processes: it never travels, and each side refuses
/// a peer that cannot prove it holds it.
@Suite("Replication handshake between processes", .serialized)
struct HandshakeProcessTests {
    /// Whoever answers at a leader URL without the secret (someone who could write the
    /// coordinator's leader key): it records every request, answers the handshake with
    /// made-up bytes, and anything else with 200.
    final class ImpostorLeader: Sendable {
        private let seen = Mutex<[String]>([])

        /// Every request so far: method, URI, headers and body, as one string each.
        var requests: [String] { seen.withLock { $0 } }

        func respond(_ request: Request) async -> Response {
            let body = (try? await request.body.collect(upTo: 1 << 20)).map { String(buffer: $0) } ?? ""
            let headers = request.headers.map { "\($0.name.canonicalName): \($0.value)" }.joined(separator: "\n")
            seen.withLock { $0.append("\(request.method.rawValue) \(request.uri)\n\(headers)\n\n\(body)") }
            guard request.uri.path == "/replication/handshake" else {
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "{}")))
            }
            let answer = #"{"nonce":"\#(Hex.encode(ReplicationHandshake.nonce()))","proof":"\#(Hex.encode(ReplicationHandshake.nonce()))"}"#
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: answer)))
        }
    }

    @Test("a follower pointed at a listener without the secret never sends it, and stops: the listener cannot prove it")
    func impostorLeaderLearnsNothing() async throws {
        let cluster = try Cluster()
        let impostor = ImpostorLeader()
        let listener = LoopbackListener { await impostor.respond($0) }
        defer { listener.stop() }
        try await listener.waitUntilListening()

        let follower = cluster.follower("follower", of: listener.url)
        try follower.start()
        let status = await follower.waitForExit(timeout: .seconds(180))
        #expect(status == 3, "\(follower.stderr.suffix(3000))")
        #expect(follower.stderr.contains("could not prove it holds the replication secret"), "\(follower.stderr.suffix(3000))")
        let requests = impostor.requests
        #expect(!requests.isEmpty)
        for request in requests {
            #expect(!request.contains(Cluster.secret), "the secret reached the impostor: \(request)")
            // Nothing but the handshake: the follower stopped at the impostor's proof.
            #expect(request.hasPrefix("POST /replication/handshake?nonce="), "\(request)")
        }
    }

    @Test("a leader and a follower holding different secrets refuse each other, and the leader admits no forged session")
    func mismatchedSecretsRefused() async throws {
        let cluster = try Cluster()
        let leader = try await cluster.startLeader("leader")
        // The follower cannot check the leader's proof: it stops before presenting its own.
        let follower = cluster.follower("follower", of: leader.url, secret: "another-secret")
        try follower.start()
        let status = await follower.waitForExit(timeout: .seconds(180))
        #expect(status == 3, "\(follower.stderr.suffix(3000))")
        #expect(follower.stderr.contains("could not prove it holds the replication secret"), "\(follower.stderr.suffix(3000))")

        // A caller without the secret that presses on past the leader's proof is refused.
        let nonce = ReplicationHandshake.nonce()
        let answer = try await TestHTTP.request(
            leader.url + "/replication/handshake?nonce=\(Hex.encode(nonce))", method: .POST)
        let session = try #require((answer.json["nonce"] as? String).flatMap(Hex.decode), "\(answer.text)")
        let forged = ReplicationHandshake.Credentials(
            session: session,
            proof: ReplicationHandshake.proof(
                secret: "another-secret", role: .initiator, initiatorNonce: nonce, responderNonce: session))
        for path in ["/replication/hello", "/replication/configuration", "/replication/snapshot"] {
            let refused = try await TestHTTP.request(leader.url + path, headers: forged.headers)
            #expect(refused.status == 403, "\(path): \(refused.text)")
        }
        // The secret itself, in the header older nodes sent, opens nothing.
        let old = try await TestHTTP.request(
            leader.url + "/replication/configuration", headers: ["X-Cumulus-Replication-Secret": Cluster.secret])
        #expect(old.status == 401, "\(old.text)")
        // Proving the secret does.
        #expect(try await TestHTTP.replicationGET(leader.url, "/replication/hello").status == 200)
    }

    @Test("a follower holding the secret follows through the handshake, and shakes hands again after the leader restarts")
    func followsAcrossLeaderRestart() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        #expect(try await cluster.save("before", value: 1, on: leader).status == 200)
        let before = try #require(await TestHTTP.head(leader.url))
        try await TestHTTP.waitForHead(follower.url, atLeast: before, timeout: .seconds(180))
        // A restarted leader has forgotten every session: the follower's next request is
        // answered 401 and it shakes hands again.
        #expect(leader.stop() == 0)
        try leader.start()
        try await TestHTTP.waitUntilUp(leader.url)
        #expect(try await cluster.save("after", value: 2, on: leader).status == 200)
        let after = try #require(await TestHTTP.head(leader.url))
        try await TestHTTP.waitForHead(follower.url, atLeast: after, timeout: .seconds(180))
    }
}
