import Crypto
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

/// API tokens, users and web auth tokens (`Docs/HTTP-API.md`, "Authentication"), kept in
/// the data directory's `auth` table. Only SHA-256 hashes of tokens are stored: a copied
/// data directory does not leak working credentials.
///
/// Credentials are configuration, not records: they are not log events, so they
/// are not replicated by the log (a follower gets them with its snapshot).
public final class AuthStore: Sendable {
    let environment: LMDBEnvironment
    let table: LMDBTable

    /// Opens (creating) the auth table of `environment`.
    public init(environment: LMDBEnvironment) throws {
        self.environment = environment
        table = try DataLayout.open(.auth, in: environment)
    }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }

    /// `bytes` random bytes as lower-case hex.
    public static func randomHex(_ bytes: Int) -> String {
        var random = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined()
    }

    /// Mints an API token for `container` in `environment`: 64 hexadecimal
    /// characters, as Apple's are (some clients refuse any other shape). It opens
    /// that environment only, so a token shipped in a development build cannot read
    /// or write production data. `origins` are the web origins whose pages may call
    /// with it from a browser (CORS, ``CrossOrigin``), checked and normalized
    /// (``CrossOrigin/normalizedOrigin(_:)``); none means no page of any origin may.
    public func createAPIToken(
        container: String, environment: DatabaseID.Environment, origins: [String] = []
    ) throws -> String {
        let origins = try origins.map(CrossOrigin.normalizedOrigin)
        let token = Self.randomHex(32)
        let digest = Self.hash(token)
        try self.environment.write { txn in
            try txn.put(table, key: [TokenKind.api.rawValue] + digest, value: Array(container.utf8) + [0] + Array(environment.name.utf8))
            if !origins.isEmpty {
                try txn.put(table, key: [TokenKind.apiOrigins.rawValue] + digest, value: Self.encode(origins: origins))
            }
        }
        return token
    }

    /// Revokes an API token, with the origins it allowed; returns whether it existed.
    @discardableResult
    public func revokeAPIToken(_ token: String) throws -> Bool {
        let digest = Self.hash(token)
        return try environment.write { txn in
            _ = try txn.delete(table, key: [TokenKind.apiOrigins.rawValue] + digest)
            return try txn.delete(table, key: [TokenKind.api.rawValue] + digest)
        }
    }

    /// What an API token opens.
    public struct APITokenScope: Sendable, Equatable {
        /// The container.
        public var container: String
        /// The environment; `nil` for a token minted before tokens were bound to one
        /// (stored as the container alone), which still opens both until revoked.
        public var environment: DatabaseID.Environment?
        /// The web origins whose pages may use the token from a browser, normalized;
        /// empty for a token minted without any, and for every token minted before
        /// tokens carried origins: those allow no cross-origin page (Docs/SECURITY.md).
        public var origins: [String] = []

        /// Whether the token opens `container` in `environment`.
        public func opens(_ container: String, in environment: DatabaseID.Environment) -> Bool {
            self.container == container && (self.environment == nil || self.environment == environment)
        }
    }

    /// What an API token opens, or `nil` if it is not one.
    public func scope(forAPIToken token: String) throws -> APITokenScope? {
        let digest = Self.hash(token)
        return try environment.read { txn in
            guard var scope = try txn.get(table, key: [TokenKind.api.rawValue] + digest).map(Self.scope(stored:)) else {
                return nil
            }
            scope.origins = try txn.get(table, key: [TokenKind.apiOrigins.rawValue] + digest).map(Self.origins(stored:)) ?? []
            return scope
        }
    }

    /// Origins stored one after another, each ended by a newline (an origin holds none).
    static func encode(origins: [String]) -> [UInt8] {
        origins.flatMap { Array($0.utf8) + [0x0A] }
    }

    static func origins(stored: [UInt8]) -> [String] {
        stored.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
    }

    /// API tokens that open both environments (minted before tokens were bound to
    /// one): `serve` warns while any remain.
    public func unboundAPITokenCount() throws -> Int {
        var count = 0
        try environment.read { txn in
            try txn.scan(table, prefix: [TokenKind.api.rawValue]) { _, value in
                if Self.scope(stored: Array(value)).environment == nil { count += 1 }
                return true
            }
        }
        return count
    }

    /// The containers API tokens open, with the environments each token opens (both
    /// for a token minted before tokens were bound to one): what a client can reach.
    public func containers() throws -> [String: Set<DatabaseID.Environment>] {
        var containers: [String: Set<DatabaseID.Environment>] = [:]
        try environment.read { txn in
            try txn.scan(table, prefix: [TokenKind.api.rawValue]) { _, value in
                let scope = Self.scope(stored: Array(value))
                containers[scope.container, default: []].formUnion(
                    scope.environment.map { [$0] } ?? [.development, .production])
                return true
            }
        }
        return containers
    }

    /// `container ‖ 0 ‖ environment name`, or the container alone (an unbound token).
    static func scope(stored: [UInt8]) -> APITokenScope {
        guard let separator = stored.firstIndex(of: 0),
            let environment = DatabaseID.Environment(name: String(decoding: stored[(separator + 1)...], as: UTF8.self))
        else { return APITokenScope(container: String(decoding: stored, as: UTF8.self), environment: nil) }
        return APITokenScope(container: String(decoding: stored[..<separator], as: UTF8.self), environment: environment)
    }

    /// The two kinds of bearer token, by their key prefix in the `auth` table.
    enum TokenKind: UInt8 {
        case api = 0x61  // "a": token → container ‖ 0 ‖ environment (or the container alone)
        // "o": API token → the origins it allows, each ended by a newline. Beside the
        // token's own entry rather than in it: a server from before origins would read a
        // longer value as an unbound token opening both environments.
        case apiOrigins = 0x6F
        case web = 0x77  // "w": token → ``WebTokenRow`` (or the user alone: minted before binding, opens nothing)
        case signInLink = 0x6C  // "l": token → container ‖ 0 ‖ user ‖ 0 ‖ u64 expiry ms, used once
    }

    private func mint(_ kind: TokenKind, bytes: Int, value: [UInt8]) throws -> String {
        let token = Self.randomHex(bytes)
        try environment.write { txn in
            try txn.put(table, key: [kind.rawValue] + Self.hash(token), value: value)
        }
        return token
    }

    private func revoke(_ kind: TokenKind, _ token: String) throws -> Bool {
        try environment.write { txn in try txn.delete(table, key: [kind.rawValue] + Self.hash(token)) }
    }

    private func lookUp(_ kind: TokenKind, _ token: String) throws -> [UInt8]? {
        try environment.read { txn in try txn.get(table, key: [kind.rawValue] + Self.hash(token)) }
    }

    /// Adds a user and returns its user record name (`_` and 32 hex digits, like CloudKit's).
    /// An `operator` may also sign in to the console's operator pages; adding a user
    /// again keeps what it was, unless `operator` makes it one.
    public func addUser(name: String? = nil, operator: Bool = false) throws -> String {
        let user = name ?? "_" + Self.randomHex(16)
        try NameRules.checkRecordName(user, allowSystem: true)
        let key = Self.userKey(user)
        try environment.write { txn in
            let kept = try txn.get(table, key: key) ?? []
            try txn.put(table, key: key, value: `operator` ? Self.operatorFlag : kept)
        }
        return user
    }

    /// A user's row: `u` ‖ user record name → empty, or ``operatorFlag`` for an operator.
    static func userKey(_ user: String) -> [UInt8] { [0x75] + Array(user.utf8) }
    /// The value of an operator's row.
    static let operatorFlag: [UInt8] = [1]

    /// Whether `user` is an operator (`cumulus users add --operator`).
    public func isOperator(_ user: String) throws -> Bool {
        try environment.read { try $0.get(table, key: Self.userKey(user)) } == Self.operatorFlag
    }

    /// Whether `user` was added.
    public func userExists(_ user: String) throws -> Bool {
        try environment.read { try $0.contains(table, key: Self.userKey(user)) }
    }

    /// Every user, sorted.
    public func users() throws -> [String] {
        var users: [String] = []
        try environment.read { txn in
            try txn.scan(table, prefix: [0x75]) { key, _ in
                users.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[1...]), as: UTF8.self))
                return true
            }
        }
        return users
    }

    /// A server-to-server key: the container it opens, the user its requests act as,
    /// and the P-256 public key that verifies their signatures.
    public struct ServerKey: Sendable {
        /// The container the key opens.
        public var container: String
        /// The user record name requests signed with it act as.
        public var user: String
        /// The public key, X9.63 form.
        public var publicKey: [UInt8]
    }

    /// `auth` key prefix of a server-to-server key: `k` ‖ key ID → container, user, key.
    static let serverKeyPrefix: UInt8 = 0x6B

    /// Registers a server-to-server public key (PEM) for `container`; returns the key
    /// ID clients send in `X-Apple-CloudKit-Request-KeyID` and the user it acts as.
    public func addServerKey(container: String, publicKeyPEM: String) throws -> (keyID: String, user: String) {
        let key: P256.Signing.PublicKey
        do {
            key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw CumulusError(.invalidArguments, "not a P-256 public key in PEM form: \(error)")
        }
        let keyID = Self.randomHex(32)
        let user = try addUser()
        var value = BinaryWriter()
        value.string(container)
        value.string(user)
        value.blob(Array(key.x963Representation))
        try environment.write { txn in try txn.put(table, key: [Self.serverKeyPrefix] + Array(keyID.utf8), value: value.bytes) }
        return (keyID, user)
    }

    /// The server-to-server key with `keyID`, or `nil`.
    public func serverKey(_ keyID: String) throws -> ServerKey? {
        guard !keyID.isEmpty, keyID.utf8.count <= 128 else { return nil }
        return try environment.read { txn in
            try txn.withValue(table, key: [Self.serverKeyPrefix] + Array(keyID.utf8)) { buffer in
                var reader = BinaryReader(buffer, context: "server key")
                return ServerKey(container: try reader.string(), user: try reader.string(), publicKey: try reader.blob())
            }
        }
    }

    /// Mints a web auth token for `user` in `container` (URL-safe: hex). As in
    /// CloudKit, a web auth token belongs to one container: it signs the user in
    /// there and nowhere else (issue 40). `session` says how long it lasts: an
    /// operator's last until revoked, a browser sign-in's as CloudKit's do.
    public func createWebAuthToken(
        for user: String, container: String, session: WebSession = .unlimited, now: Timestamp = .now()
    ) throws -> String {
        guard try userExists(user) else { throw CumulusError(.invalidArguments, "no user \(user); add it first") }
        guard !container.isEmpty, !container.utf8.contains(0) else {
            throw CumulusError(.invalidArguments, "a web auth token needs the container it signs in to")
        }
        let row = WebTokenRow(container: container, user: user, session: session, expires: session.expiry(from: now))
        return try mint(.web, bytes: 24, value: row.encoded)
    }

    /// Revokes a web auth token; returns whether it existed.
    @discardableResult
    public func revokeWebAuthToken(_ token: String) throws -> Bool {
        try revoke(.web, token)
    }

    /// The user a web auth token signs in to `container`, or `nil`: a token of
    /// another container, one minted before tokens were bound to a container (stored
    /// as the user alone), or one whose session has expired signs in no one.
    ///
    /// An idle session's use moves its expiry on, written at most every
    /// ``WebSession/refreshAfter`` and only where `extend` (the leader: a follower's
    /// `auth` table is its leader's copy).
    public func user(forWebAuthToken token: String, container: String, now: Timestamp = .now(), extend: Bool = true)
        throws -> String?
    {
        try user(forWebAuthTokenDigest: Self.hash(token), container: container, now: now, extend: extend)
    }

    /// ``user(forWebAuthToken:container:now:extend:)`` for the token whose SHA-256 is `digest`.
    func user(forWebAuthTokenDigest digest: [UInt8], container: String, now: Timestamp, extend: Bool) throws -> String? {
        let key = [TokenKind.web.rawValue] + digest
        guard let stored = try environment.read({ try $0.get(table, key: key) }), let row = WebTokenRow(stored),
            row.container == container, row.isLive(at: now)
        else { return nil }
        if extend, row.session == .idle, let expires = row.expires,
            WebSession.later(now, by: WebSession.idleLifetime).millisecondsSince1970 - expires.millisecondsSince1970
                >= WebSession.refreshAfter.components.seconds * 1_000
        {
            var moved = row
            moved.expires = WebSession.idle.expiry(from: now)
            try environment.write { txn in
                // Only if still there: a sign-out in between must win.
                if try txn.get(table, key: key) != nil { try txn.put(table, key: key, value: moved.encoded) }
            }
        }
        return row.user
    }

    /// Whether the web auth token whose SHA-256 is `digest` still signs `user` in to
    /// `container`: what keeps a URL made with it (a `webcourierURL`) working, so
    /// the URL dies with the sign-in. A use of such a URL is a use of the session:
    /// with `extend` (the leader) it moves an idle session's expiry on, as a request does.
    public func webAuthTokenIsLive(
        digest: [UInt8], user: String, container: String, now: Timestamp = .now(), extend: Bool = false
    ) throws -> Bool {
        try self.user(forWebAuthTokenDigest: digest, container: container, now: now, extend: extend) == user
    }

    /// The SHA-256 of `token`, as the table keys it.
    public static func digest(of token: String) -> [UInt8] { hash(token) }

    /// How many web auth tokens were minted before tokens were bound to a container
    /// (they open nothing now; `serve` says so while any remain).
    public func unboundWebAuthTokenCount() throws -> Int {
        var count = 0
        try environment.read { txn in
            try txn.scan(table, prefix: [TokenKind.web.rawValue]) { _, value in
                if !value.contains(0) { count += 1 }  // no container: the user alone
                return true
            }
        }
        return count
    }
}
