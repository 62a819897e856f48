import Crypto
import CumulusModel

/// How two nodes prove to each other that they hold the same replication secret
/// without either sending it (`POST /replication/handshake`, Docs/HTTP-API.md).
///
/// The follower (the *initiator*) sends a fresh nonce. The node it called (the
/// *responder*) answers a fresh nonce of its own and its proof; the follower checks
/// that proof before it sends anything else, then presents its own proof, with the
/// responder's nonce as the session's name, on every later request:
///
/// ```
/// proof(role) = HMAC-SHA256(key: secret, "cumulus-replication-handshake-v1" ‖ 0 ‖ role ‖ 0
///                                        ‖ initiator nonce ‖ responder nonce)
/// ```
///
/// with `role` `leader` for the responder's proof and `follower` for the initiator's.
/// Why each part: fresh nonces on both sides mean neither proof can be recorded and
/// replayed to another peer or later; the role labels mean a proof one side made can
/// never be reflected back as the other side's; the nonces have a fixed length, so the
/// transcript parses one way only. Whoever answers at a published leader URL without
/// the secret learns a nonce and an HMAC of two nonces, nothing that opens anything.
public enum ReplicationHandshake {
    /// Bytes in each nonce.
    public static let nonceLength = 32
    /// Bytes in each proof (HMAC-SHA256).
    public static let proofLength = 32
    /// The header naming the session (the responder's nonce, in hex).
    public static let sessionHeader = "x-cumulus-replication-session"
    /// The header carrying the initiator's proof, in hex.
    public static let proofHeader = "x-cumulus-replication-proof"
    /// Starts every transcript, so a proof made for this protocol means nothing elsewhere.
    static let label = "cumulus-replication-handshake-v1"

    /// Which side a proof speaks for.
    public enum Role: String, Sendable {
        /// The node that was called (a leader, or any node asked for its status).
        case responder = "leader"
        /// The node that called (a follower, or `cumulus status`).
        case initiator = "follower"
    }

    /// The proof that `role` holds `secret`, for this pair of nonces.
    public static func proof(secret: String, role: Role, initiatorNonce: [UInt8], responderNonce: [UInt8]) -> [UInt8] {
        var transcript = Array(label.utf8)
        transcript.append(0)
        transcript.append(contentsOf: Array(role.rawValue.utf8))
        transcript.append(0)
        transcript.append(contentsOf: initiatorNonce)
        transcript.append(contentsOf: responderNonce)
        let key = SymmetricKey(data: Array(secret.utf8))
        return Array(HMAC<SHA256>.authenticationCode(for: transcript, using: key))
    }

    /// A fresh random nonce.
    public static func nonce() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<nonceLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// What the follower presents on every request once the responder proved itself.
    public struct Credentials: Sendable, Hashable {
        /// The session: the responder's nonce.
        public var session: [UInt8]
        /// The initiator's proof for that session.
        public var proof: [UInt8]

        /// The request headers that carry them.
        public var headers: [String: String] {
            [sessionHeader: Hex.encode(session), proofHeader: Hex.encode(proof)]
        }
    }

    /// The follower's side: holds its nonce until the responder answers.
    public struct Initiator: Sendable {
        let secret: String
        /// The nonce sent to the responder.
        public let nonce: [UInt8]

        /// A handshake with a fresh nonce (tests pass their own).
        public init(secret: String, nonce: [UInt8] = ReplicationHandshake.nonce()) {
            self.secret = secret
            self.nonce = nonce
        }

        /// Checks the responder's answer (`responderNonce`, `responderProof`) and, if it
        /// proves the secret, returns what to present from now on. A responder that
        /// cannot prove it is ``ReplicationError/refused(_:)``: nothing more is sent to it.
        public func finish(responderNonce: [UInt8], responderProof: [UInt8]) throws(ReplicationError) -> Credentials {
            guard responderNonce.count == nonceLength, responderNonce != nonce else {
                throw .refused("the peer answered the handshake with a malformed or reflected nonce")
            }
            let expected = proof(secret: secret, role: .responder, initiatorNonce: nonce, responderNonce: responderNonce)
            guard ConstantTime.equal(responderProof, expected) else {
                throw .refused(
                    "the peer could not prove it holds the replication secret (one of the two nodes holds another secret, "
                        + "or the URL does not lead to a Cumulus node of this cluster); nothing was sent to it")
            }
            return Credentials(
                session: responderNonce,
                proof: proof(secret: secret, role: .initiator, initiatorNonce: nonce, responderNonce: responderNonce))
        }
    }
}
