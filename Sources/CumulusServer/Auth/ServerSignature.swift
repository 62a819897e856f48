import Crypto
import CumulusModel
import Foundation

/// Server-to-server authentication as CloudKit Web Services does it (CLOUDKIT.md
/// §1.1): the client signs `"{ISO8601 date}:{base64(SHA-256(body))}:{path}"` with its
/// ECDSA P-256 key and sends the key ID, the date and the base64 DER signature in
/// `X-Apple-CloudKit-Request-KeyID`, `-ISO8601Date` and `-SignatureV1`. Requests
/// dated more than 10 minutes away from the server's clock are refused, and a
/// signature is accepted once within those minutes (``SignatureReplayCache``), so a
/// captured request cannot be replayed. As CloudKit's, the signed string leaves out
/// the query string and the headers: TLS is what keeps those from being changed.
enum ServerSignature {
    /// How far a request's date may be from now.
    static let maxSkew: TimeInterval = 600

    static func verify(
        _ request: APIRequest, keyID: String, container: String, auth: AuthStore, replays: SignatureReplayCache,
        now: Date = Date()
    ) throws -> CloudKitAPI.Caller {
        guard let key = try auth.serverKey(keyID), key.container == container else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("unknown key ID for this container")
        }
        guard let dateText = request.headers["x-apple-cloudkit-request-iso8601date"],
            let signatureText = request.headers["x-apple-cloudkit-request-signaturev1"]
        else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("the date and signature headers are required")
        }
        guard let date = ISO8601DateFormatter().date(from: dateText) else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("the date is not ISO 8601 (e.g. 2026-01-01T12:00:00Z)")
        }
        guard abs(date.timeIntervalSince(now)) <= maxSkew else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("the request is dated more than 10 minutes from now")
        }
        guard let signatureBytes = Data(base64Encoded: signatureText),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: key.publicKey)
        else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("the signature is not base64 DER")
        }
        let message = message(date: dateText, body: request.body, path: request.path)
        guard publicKey.isValidSignature(signature, for: Data(message.utf8)) else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("it does not match the request")
        }
        // Only signatures that verify are remembered: garbage cannot fill the cache.
        switch replays.admit(Array(signature.rawRepresentation), until: date.addingTimeInterval(maxSkew), now: now) {
        case .fresh: break
        case .replayed:
            throw CloudKitAPI.AuthenticationFailure.badSignature("this signed request was already received; sign each request anew")
        case .full:
            throw CumulusError(.serverRejectedRequest, "too many signed requests within 10 minutes; retry shortly")
        }
        return CloudKitAPI.Caller(container: container, user: key.user, serverToServer: true)
    }

    /// The signed message.
    static func message(date: String, body: [UInt8], path: String) -> String {
        "\(date):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(path)"
    }
}
