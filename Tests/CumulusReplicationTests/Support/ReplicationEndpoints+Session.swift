import CumulusModel
import CumulusReplication
import CumulusServer
import Foundation

extension ReplicationEndpoints {
    /// The headers of a session with these endpoints, shaken hands for in process as a
    /// follower's ``LeaderClient`` does over HTTP, proving `secret`. Throws if the
    /// endpoints do not prove it back.
    func sessionHeaders(secret: String) async throws -> [String: String] {
        let initiator = ReplicationHandshake.Initiator(secret: secret)
        let answer = await answer(
            APIRequest(method: "POST", path: "/replication/handshake", query: ["nonce": Hex.encode(initiator.nonce)]))
        guard case .json(200, let body) = answer,
            let fields = try? JSONDecoder().decode([String: String].self, from: Data(body)),
            let nonce = fields["nonce"].flatMap(Hex.decode), let proof = fields["proof"].flatMap(Hex.decode)
        else { throw TestFailure("the handshake answered \(answer)") }
        return try initiator.finish(responderNonce: nonce, responderProof: proof).headers
    }
}
