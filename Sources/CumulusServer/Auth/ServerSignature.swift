import Crypto
import CumulusModel
import Foundation

/// Server-to-server authentication as CloudKit Web Services does it
/// (`Docs/HTTP-API.md`, "Authentication"): the client signs `"{ISO8601 date}:{base64(SHA-256(body))}:{subpath}"` with
/// its ECDSA P-256 key and sends the key ID, the date and the base64 DER signature in
/// `X-Apple-CloudKit-Request-KeyID`, `-ISO8601Date` and `-SignatureV1`. The subpath is
/// the request target as received: the path, and when the request has a query, `?`
/// and the raw, undecoded query string (CloudKit JS adds `ckjsBuildVersion`,
/// `ckjsVersion` and `clientId` to every request and signs them). Clients that sign the
/// path alone (Apple's example, Sputnik, MistKit) are accepted too, and then the query
/// is not covered. Requests dated more than 10 minutes away from the server's clock
/// are refused, and a signature is accepted once within those minutes
/// (``SignatureReplayCache``), so a captured request cannot be replayed. The headers
/// are never signed: TLS is what keeps those, and an unsigned query, from being changed.
enum ServerSignature {
    /// How far a request's date may be from now.
    static let maxSkew: TimeInterval = 600
    /// The header naming the key, as CloudKit spells it (header lookups lower-case it).
    static let keyIDHeader = "X-Apple-CloudKit-Request-KeyID"
    /// The header holding the date that was signed.
    static let dateHeader = "X-Apple-CloudKit-Request-ISO8601Date"
    /// The header holding the signature.
    static let signatureHeader = "X-Apple-CloudKit-Request-SignatureV1"
    /// Every header a signed request carries.
    static let headerNames = [keyIDHeader, dateHeader, signatureHeader]

    static func verify(
        _ request: APIRequest, keyID: String, container: String, auth: AuthStore, replays: SignatureReplayCache,
        now: Date = Date()
    ) throws -> CloudKitAPI.Caller {
        guard let key = try auth.serverKey(keyID), key.container == container else {
            throw CloudKitAPI.AuthenticationFailure.badSignature("unknown key ID for this container")
        }
        guard let dateText = request.headers[dateHeader.lowercased()],
            let signatureText = request.headers[signatureHeader.lowercased()]
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
        let verifies = signedTargets(of: request).contains { target in
            publicKey.isValidSignature(signature, for: Data(message(date: dateText, body: request.body, target: target).utf8))
        }
        guard verifies else {
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

    /// The targets a signature over `request` may cover, the one that covers the most
    /// first: the path with `?` and the raw query exactly as received, then the path
    /// alone. A signature over the path with its query fails once the query is altered,
    /// since neither form then matches what was signed.
    static func signedTargets(of request: APIRequest) -> [String] {
        guard let rawQuery = request.rawQuery else { return [request.path] }
        return [request.path + "?" + rawQuery, request.path]
    }

    /// The signed message for `target`, the request target from `/database/1/…` on.
    static func message(date: String, body: [UInt8], target: String) -> String {
        "\(date):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(target)"
    }
}
