import CumulusModel
import Synchronization

/// The responder's side of ``ReplicationHandshake``: answers challenges and admits the
/// requests that present a session's proof.
///
/// A session is remembered from the answer on, keyed by the responder's nonce, with
/// the proof its initiator must present. The table is bounded: anyone can ask for a
/// handshake, so at ``capacity`` the oldest session never used is forgotten first
/// (then the one idle longest), and a session not used for ``idleTimeout`` expires.
/// A follower whose session was forgotten gets 401 and shakes hands again.
///
/// **Thread safety**: every method may be called from any task at once.
public final class ReplicationSessions: Sendable {
    /// Sessions kept at most.
    public let capacity: Int
    /// A session not used for this long is forgotten.
    public let idleTimeout: Duration
    private let secret: String
    private let sessions = Mutex<[[UInt8]: Session]>([:])

    struct Session {
        var expectedProof: [UInt8]
        var lastUsed: ContinuousClock.Instant
        var used: Bool
    }

    /// What an initiator's request presented, judged.
    public enum Admission: Sendable, Equatable {
        /// A session this node answered, with the right proof.
        case admitted
        /// No session, or one this node does not know (never answered, or forgotten):
        /// shake hands again (401).
        case unknownSession
        /// A known session with a wrong proof: the caller does not hold the secret (403).
        case wrongProof
    }

    /// Sessions for `secret`.
    public init(secret: String, capacity: Int = 1024, idleTimeout: Duration = .seconds(600)) {
        self.secret = secret
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    /// Answers an initiator's `initiatorNonce`: this node's fresh nonce and its proof.
    /// `nil` for a nonce of the wrong length. `responderNonce` is for tests.
    public func answer(
        initiatorNonce: [UInt8], responderNonce: [UInt8] = ReplicationHandshake.nonce(), now: ContinuousClock.Instant = .now
    ) -> (nonce: [UInt8], proof: [UInt8])? {
        guard initiatorNonce.count == ReplicationHandshake.nonceLength,
            responderNonce.count == ReplicationHandshake.nonceLength
        else { return nil }
        let session = Session(
            expectedProof: ReplicationHandshake.proof(
                secret: secret, role: .initiator, initiatorNonce: initiatorNonce, responderNonce: responderNonce),
            lastUsed: now, used: false)
        sessions.withLock { table in
            if table.count >= capacity { Self.makeRoom(in: &table, now: now, idleTimeout: idleTimeout) }
            table[responderNonce] = session
        }
        return (
            responderNonce,
            ReplicationHandshake.proof(
                secret: secret, role: .responder, initiatorNonce: initiatorNonce, responderNonce: responderNonce)
        )
    }

    /// Judges a request's session and proof headers (hex, as sent).
    public func admit(session: String?, proof: String?, now: ContinuousClock.Instant = .now) -> Admission {
        guard let session = session.flatMap(Hex.decode), let proof = proof.flatMap(Hex.decode) else {
            return .unknownSession
        }
        return sessions.withLock { table in
            guard var entry = table[session] else { return .unknownSession }
            guard now - entry.lastUsed < idleTimeout else {
                table[session] = nil
                return .unknownSession
            }
            guard ConstantTime.equal(proof, entry.expectedProof) else { return .wrongProof }
            entry.lastUsed = now
            entry.used = true
            table[session] = entry
            return .admitted
        }
    }

    /// Sessions held now.
    public var count: Int { sessions.withLock { $0.count } }

    /// Drops expired sessions, then, if none expired, the oldest never used (or the
    /// one idle longest): a flood of handshakes displaces other floods first.
    private static func makeRoom(in table: inout [[UInt8]: Session], now: ContinuousClock.Instant, idleTimeout: Duration) {
        let before = table.count
        table = table.filter { now - $0.value.lastUsed < idleTimeout }
        guard table.count == before else { return }
        let victim = table.filter { !$0.value.used }.min { $0.value.lastUsed < $1.value.lastUsed }
            ?? table.min { $0.value.lastUsed < $1.value.lastUsed }
        if let victim { table[victim.key] = nil }
    }
}
