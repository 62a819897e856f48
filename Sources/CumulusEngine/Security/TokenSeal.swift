import Crypto

/// Authenticates the opaque things this server hands to clients — query cursors,
/// change tokens, notification tokens — so it can tell its own from forged or
/// damaged ones: body ‖ the first 16 bytes of HMAC-SHA256(secret, body).
enum TokenSeal {
    /// Bytes of MAC appended to a body.
    static let macLength = 16

    /// `body` with its MAC appended.
    static func seal(_ body: [UInt8], secret: [UInt8]) -> [UInt8] {
        body + mac(body, secret)
    }

    /// The body of sealed `bytes`, or `nil` if the MAC does not verify.
    static func open(_ bytes: [UInt8], secret: [UInt8]) -> [UInt8]? {
        guard bytes.count > macLength else { return nil }
        let body = Array(bytes.dropLast(macLength))
        let expected = mac(body, secret)
        // Constant time: a forger learns nothing from how long a rejection takes.
        let difference = zip(bytes.suffix(macLength), expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
        return difference == 0 ? body : nil
    }

    private static func mac(_ body: [UInt8], _ secret: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: secret)).prefix(macLength))
    }
}
