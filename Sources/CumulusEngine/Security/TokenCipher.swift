import Crypto
import Synchronization

/// Encrypts and authenticates what a client must carry but not read: a query
/// cursor names the record a page ended at, which may be one the caller may not
/// see (a page passes over hidden records), so a readable cursor would leak names
/// and sort values (issue 40). ``TokenSeal`` only authenticates; this hides too.
///
/// ```
/// [12] nonce ‖ AES-256-GCM(body) ‖ [16] tag
/// ```
/// The key is derived from the server secret per purpose (HKDF-SHA256), so the
/// cipher's key is never the MAC's. `binding` is authenticated but not carried:
/// it names who may open the token (user, container, environment, database), and
/// a token presented by anyone else fails exactly as a damaged one does.
enum TokenCipher {
    /// Bytes the cipher adds to a body: the nonce and the tag.
    static let overhead = 12 + 16

    /// The key for `purpose` under `secret`, derived once and then kept: every query
    /// page with more to come seals a cursor, and deriving its key again each time
    /// was a third of the cost of making one.
    static func key(secret: [UInt8], purpose: String) -> SymmetricKey {
        let name = DerivedKeyName(secret: secret, purpose: purpose)
        if let kept = derived.withLock({ $0[name] }) { return kept }
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret), salt: [UInt8](), info: Array(purpose.utf8), outputByteCount: 32)
        derived.withLock { keys in
            // A process has a secret per container: a handful. Tests make thousands of
            // containers, so the cache starts over rather than grow.
            if keys.count >= 64 { keys.removeAll() }
            keys[name] = key
        }
        return key
    }

    /// What a derived key is kept under.
    private struct DerivedKeyName: Hashable, Sendable {
        var secret: [UInt8]
        var purpose: String
    }

    private static let derived = Mutex<[DerivedKeyName: SymmetricKey]>([:])

    /// `body` encrypted under `key` with a fresh random nonce, bound to `binding`.
    static func seal(_ body: [UInt8], key: SymmetricKey, binding: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(body, using: key, nonce: AES.GCM.Nonce(), authenticating: binding)
        return Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
    }

    /// The body of `bytes`, or `nil` if they were not sealed under `key` and
    /// `binding` (damaged, forged, another server's, or someone else's).
    static func open(_ bytes: [UInt8], key: SymmetricKey, binding: [UInt8]) -> [UInt8]? {
        guard bytes.count >= overhead,
            let box = try? AES.GCM.SealedBox(combined: bytes),
            let body = try? AES.GCM.open(box, using: key, authenticating: binding)
        else { return nil }
        return Array(body)
    }
}
