import CumulusModel
import Testing

@testable import CumulusReplication

/// The handshake in which two nodes prove the replication secret to each other
/// without sending it, without sockets.
@Suite("Replication handshake")
struct ReplicationHandshakeTests {
    static let secret = "shared-secret"

    /// A follower and a responder holding `followerSecret` and `responderSecret`, and the
    /// follower's verdict on the responder's answer.
    static func shake(followerSecret: String = secret, responderSecret: String = secret)
        -> (Result<ReplicationHandshake.Credentials, ReplicationError>, ReplicationSessions)
    {
        let follower = ReplicationHandshake.Initiator(secret: followerSecret)
        let sessions = ReplicationSessions(secret: responderSecret)
        guard let (nonce, proof) = sessions.answer(initiatorNonce: follower.nonce) else {
            return (.failure(.protocolViolation("no answer")), sessions)
        }
        return (Result { () throws(ReplicationError) in try follower.finish(responderNonce: nonce, responderProof: proof) }, sessions)
    }

    @Test("two nodes holding the same secret each prove it, and the session is admitted")
    func sameSecret() throws {
        let (result, sessions) = Self.shake()
        let credentials = try result.get()
        let headers = credentials.headers
        #expect(!headers.values.contains { $0.contains(Self.secret) })
        let admission = sessions.admit(
            session: headers[ReplicationHandshake.sessionHeader], proof: headers[ReplicationHandshake.proofHeader])
        #expect(admission == .admitted)
    }

    @Test("a follower refuses a responder that cannot prove the secret, before presenting anything")
    func followerRefusesImpostor() {
        let (result, _) = Self.shake(responderSecret: "the impostor's guess")
        guard case .failure(.refused(let why)) = result else {
            Issue.record("expected a refusal, got \(result)")
            return
        }
        #expect(why.contains("could not prove"))
        // An answer that echoes the follower's own nonce (a reflection) is refused too.
        let follower = ReplicationHandshake.Initiator(secret: Self.secret)
        let reflected = ReplicationHandshake.proof(
            secret: Self.secret, role: .responder, initiatorNonce: follower.nonce, responderNonce: follower.nonce)
        #expect(throws: ReplicationError.self) { try follower.finish(responderNonce: follower.nonce, responderProof: reflected) }
    }

    @Test("a responder refuses a follower whose proof is made from another secret, or is another role's")
    func responderRefusesImpostor() throws {
        let nonce = ReplicationHandshake.nonce()
        let sessions = ReplicationSessions(secret: Self.secret)
        let (session, responderProof) = try #require(sessions.answer(initiatorNonce: nonce))
        let wrong = ReplicationHandshake.proof(secret: "guess", role: .initiator, initiatorNonce: nonce, responderNonce: session)
        #expect(sessions.admit(session: Hex.encode(session), proof: Hex.encode(wrong)) == .wrongProof)
        // The responder's own proof, sent back, is not the follower's: the roles differ.
        #expect(sessions.admit(session: Hex.encode(session), proof: Hex.encode(responderProof)) == .wrongProof)
        #expect(sessions.admit(session: nil, proof: nil) == .unknownSession)
        #expect(sessions.admit(session: Hex.encode(nonce), proof: Hex.encode(wrong)) == .unknownSession)
        let right = ReplicationHandshake.proof(
            secret: Self.secret, role: .initiator, initiatorNonce: nonce, responderNonce: session)
        #expect(sessions.admit(session: Hex.encode(session), proof: Hex.encode(right)) == .admitted)
    }

    @Test("proofs depend on both nonces and the role, and match a fixed vector")
    func proofsBindTheTranscript() {
        let a = [UInt8](repeating: 1, count: 32)
        let b = [UInt8](repeating: 2, count: 32)
        let base = ReplicationHandshake.proof(secret: "k", role: .initiator, initiatorNonce: a, responderNonce: b)
        #expect(base != ReplicationHandshake.proof(secret: "k", role: .responder, initiatorNonce: a, responderNonce: b))
        #expect(base != ReplicationHandshake.proof(secret: "k", role: .initiator, initiatorNonce: b, responderNonce: a))
        #expect(base != ReplicationHandshake.proof(secret: "K", role: .initiator, initiatorNonce: a, responderNonce: b))
        #expect(base.count == ReplicationHandshake.proofLength)
        // HMAC-SHA256(key "k", "cumulus-replication-handshake-v1" 00 "follower" 00 01×32 02×32),
        // so another implementation can check itself against this one.
        #expect(Hex.encode(base) == Self.vector)
        #expect(ReplicationHandshake.nonce() != ReplicationHandshake.nonce())
    }

    static let vector = "232740fd2a21834486fdbb606ec02734d5838145304774b6df4a6be575a08da6"

    @Test("sessions expire when idle, and a flood of handshakes displaces unused sessions first")
    func sessionsBounded() throws {
        let start = ContinuousClock.now
        let sessions = ReplicationSessions(secret: Self.secret, capacity: 4, idleTimeout: .seconds(60))
        let follower = ReplicationHandshake.Initiator(secret: Self.secret)
        let (nonce, proof) = try #require(sessions.answer(initiatorNonce: follower.nonce, now: start))
        let credentials = try follower.finish(responderNonce: nonce, responderProof: proof)
        let (session, presented) = (Hex.encode(credentials.session), Hex.encode(credentials.proof))
        #expect(sessions.admit(session: session, proof: presented, now: start + .seconds(1)) == .admitted)
        for second in 2..<12 {
            _ = sessions.answer(initiatorNonce: ReplicationHandshake.nonce(), now: start + .seconds(second))
        }
        #expect(sessions.count == 4)
        // The used session outlived ten unused ones...
        #expect(sessions.admit(session: session, proof: presented, now: start + .seconds(20)) == .admitted)
        // ...until it idled out.
        #expect(sessions.admit(session: session, proof: presented, now: start + .seconds(81)) == .unknownSession)
        #expect(sessions.answer(initiatorNonce: [1, 2, 3]) == nil)
    }
}
