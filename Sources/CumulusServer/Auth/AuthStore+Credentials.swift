import CumulusModel
import CumulusStorage

/// The credentials the `auth` table holds, listed and revoked by their IDs (the console's
/// token page). A token's ID is the hex SHA-256 the table keys it by: it names the token
/// without being it, so listing them hands out nothing that signs anyone in.
extension AuthStore {
    /// An API token, as listed.
    public struct APITokenEntry: Sendable, Equatable {
        /// Its ID (hex SHA-256 of the token).
        public var id: String
        /// What it opens.
        public var scope: APITokenScope
    }

    /// A web auth token, as listed.
    public struct WebAuthTokenEntry: Sendable, Equatable {
        /// Its ID (hex SHA-256 of the token).
        public var id: String
        /// The container it signs in to.
        public var container: String
        /// The user it signs in.
        public var user: String
        /// When it ends (`nil`: when revoked).
        public var expires: Timestamp?
    }

    /// A server-to-server key, as listed.
    public struct ServerKeyEntry: Sendable, Equatable {
        /// The key ID clients send.
        public var keyID: String
        /// The container it opens.
        public var container: String
        /// The user its requests act as.
        public var user: String
    }

    /// Every API token, by ID.
    public func apiTokens() throws -> [APITokenEntry] {
        var entries: [APITokenEntry] = []
        try environment.read { txn in
            try txn.scan(table, prefix: [TokenKind.api.rawValue]) { key, value in
                let digest = Array(key.dropFirst())
                var scope = Self.scope(stored: Array(value))
                scope.origins = try txn.get(table, key: [TokenKind.apiOrigins.rawValue] + digest).map(Self.origins(stored:)) ?? []
                entries.append(APITokenEntry(id: Hex.encode(digest), scope: scope))
                return true
            }
        }
        return entries
    }

    /// Every web auth token bound to a container (older ones sign in no one), by ID.
    public func webAuthTokens() throws -> [WebAuthTokenEntry] {
        var entries: [WebAuthTokenEntry] = []
        try environment.read { txn in
            try txn.scan(table, prefix: [TokenKind.web.rawValue]) { key, value in
                if let row = WebTokenRow(Array(value)) {
                    entries.append(WebAuthTokenEntry(
                        id: Hex.encode(Array(key.dropFirst())), container: row.container, user: row.user, expires: row.expires))
                }
                return true
            }
        }
        return entries
    }

    /// Every server-to-server key.
    public func serverKeys() throws -> [ServerKeyEntry] {
        var entries: [ServerKeyEntry] = []
        try environment.read { txn in
            try txn.scan(table, prefix: [Self.serverKeyPrefix]) { key, value in
                var reader = BinaryReader(value, context: "server key")
                entries.append(ServerKeyEntry(
                    keyID: String(decoding: UnsafeRawBufferPointer(rebasing: key.dropFirst()), as: UTF8.self),
                    container: try reader.string(), user: try reader.string()))
                return true
            }
        }
        return entries
    }

    /// Revokes the API token whose ID is `id` (with the origins it allowed); whether it existed.
    @discardableResult
    public func revokeAPIToken(id: String) throws -> Bool {
        guard let digest = Self.digest(id: id) else { return false }
        return try environment.write { txn in
            _ = try txn.delete(table, key: [TokenKind.apiOrigins.rawValue] + digest)
            return try txn.delete(table, key: [TokenKind.api.rawValue] + digest)
        }
    }

    /// Revokes the web auth token whose ID is `id`; whether it existed.
    @discardableResult
    public func revokeWebAuthToken(id: String) throws -> Bool {
        guard let digest = Self.digest(id: id) else { return false }
        return try environment.write { txn in try txn.delete(table, key: [TokenKind.web.rawValue] + digest) }
    }

    /// Removes the server-to-server key `keyID`: requests signed with it are refused.
    /// Whether it existed.
    @discardableResult
    public func removeServerKey(_ keyID: String) throws -> Bool {
        guard !keyID.isEmpty, keyID.utf8.count <= 128 else { return false }
        return try environment.write { txn in try txn.delete(table, key: [Self.serverKeyPrefix] + Array(keyID.utf8)) }
    }

    /// A token ID's digest, or `nil` if it is not 64 hex digits.
    private static func digest(id: String) -> [UInt8]? {
        guard id.utf8.count == 64, let bytes = Hex.decode(id) else { return nil }
        return bytes
    }
}
