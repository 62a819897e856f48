import Crypto
import CumulusModel
import _CryptoExtras

/// A password as the `auth` table keeps it: scrypt (RFC 7914, BoringSSL's, through
/// swift-crypto) of the password under a random salt, with the cost it was made at, so
/// the cost can rise for new passwords without breaking old ones.
///
/// ```
/// u8 version (1) ‖ u8 log2 N ‖ u8 r ‖ u8 p ‖ [16] salt ‖ [32] derived key
/// ```
///
/// scrypt is slow and memory-hard on purpose: at the default cost (N = 2^15, r = 8,
/// 32 MiB) one guess takes about 0.1 s of a core, and a stolen table gives a guesser
/// nothing faster. The sign-in page limits guesses besides (``SignInGuard``).
struct PasswordHash: Sendable, Equatable {
    /// scrypt's cost: N = 2^`logN` rounds of blocks of `128 × r` bytes, `p` lanes.
    struct Cost: Sendable, Equatable {
        var logN: UInt8
        var r: UInt8
        var p: UInt8

        /// What passwords are hashed at: about 0.1 s and 32 MiB per guess.
        static let standard = Cost(logN: 15, r: 8, p: 1)
        /// The cheapest cost accepted: for tests, which hash many passwords.
        static let minimum = Cost(logN: 10, r: 8, p: 1)
    }

    static let version: UInt8 = 1
    static let saltLength = 16
    static let keyLength = 32
    /// The most password bytes hashed: longer ones are refused, not truncated, so two
    /// passwords that differ only past it are never the same.
    static let maxPasswordBytes = 1_024

    let cost: Cost
    let salt: [UInt8]
    let key: [UInt8]

    /// `password` hashed at `cost` under a fresh salt.
    init(password: String, cost: Cost = .standard) throws {
        var random = SystemRandomNumberGenerator()
        let salt = (0..<Self.saltLength).map { _ in UInt8.random(in: 0...255, using: &random) }
        try self.init(password: password, salt: salt, cost: cost)
    }

    private init(password: String, salt: [UInt8], cost: Cost) throws {
        self.cost = cost
        self.salt = salt
        key = try Self.derive(password, salt: salt, cost: cost)
    }

    private init(cost: Cost, salt: [UInt8], key: [UInt8]) {
        self.cost = cost
        self.salt = salt
        self.key = key
    }

    private static func derive(_ password: String, salt: [UInt8], cost: Cost) throws -> [UInt8] {
        let bytes = Array(password.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPasswordBytes else {
            throw CumulusError(.invalidArguments, "a password is 1 to \(maxPasswordBytes) bytes")
        }
        let derived = try KDF.Scrypt.deriveKey(
            from: bytes, salt: salt, outputByteCount: keyLength, rounds: 1 << Int(cost.logN), blockSize: Int(cost.r),
            parallelism: Int(cost.p))
        return derived.withUnsafeBytes { Array($0) }
    }

    /// Whether `password` is the one hashed, compared in constant time.
    func matches(_ password: String) -> Bool {
        guard let derived = try? Self.derive(password, salt: salt, cost: cost) else { return false }
        return ConstantTime.equal(derived, key)
    }

    /// The stored bytes.
    var encoded: [UInt8] {
        [Self.version, cost.logN, cost.r, cost.p] + salt + key
    }

    /// The hash stored as `bytes`, or `nil` if they are not one this build reads (a
    /// password that cannot be read signs no one in).
    init?(encoded bytes: [UInt8]) {
        guard bytes.count == 4 + Self.saltLength + Self.keyLength, bytes[0] == Self.version,
            (Cost.minimum.logN...20).contains(bytes[1]), (1...32).contains(bytes[2]), (1...16).contains(bytes[3])
        else { return nil }
        self.init(
            cost: Cost(logN: bytes[1], r: bytes[2], p: bytes[3]), salt: Array(bytes[4..<(4 + Self.saltLength)]),
            key: Array(bytes[(4 + Self.saltLength)...]))
    }
}
