import CumulusModel
import CumulusStorage

/// What browser sign-in needs of the `auth` table (issue 41): users' passwords and
/// one-time sign-in links. Like every credential here, only hashes are stored.
extension AuthStore {
    /// `auth` key prefix of a user's password: `p` ‖ user → ``PasswordHash``.
    static let passwordPrefix: UInt8 = 0x70

    /// How long a sign-in link works.
    public static let signInLinkLifetime: Duration = .seconds(15 * 60)

    /// Sets `user`'s password (replacing any), hashed with scrypt at `cost`.
    func setPassword(_ password: String, for user: String, cost: PasswordHash.Cost) throws {
        guard try userExists(user) else { throw CumulusError(.invalidArguments, "no user \(user); add it first") }
        let hash = try PasswordHash(password: password, cost: cost)
        try environment.write { txn in
            try txn.put(table, key: [Self.passwordPrefix] + Array(user.utf8), value: hash.encoded)
        }
    }

    /// Sets `user`'s password at the standard cost (`cumulus users passwd`).
    public func setPassword(_ password: String, for user: String) throws {
        try setPassword(password, for: user, cost: .standard)
    }

    /// Removes `user`'s password: they can no longer sign in with one. Returns whether
    /// they had one.
    @discardableResult
    public func removePassword(for user: String) throws -> Bool {
        try environment.write { txn in try txn.delete(table, key: [Self.passwordPrefix] + Array(user.utf8)) }
    }

    /// Whether `password` is `user`'s. A user without a password (or an unknown one)
    /// costs the same hash as one with, so timing does not tell which users exist.
    func checkPassword(_ password: String, for user: String) throws -> Bool {
        let stored = try environment.read { txn in
            try txn.get(table, key: [Self.passwordPrefix] + Array(user.utf8))
        }
        guard let stored, let hash = PasswordHash(encoded: stored) else {
            // The same work as a check: hashing the guess once at the standard cost.
            _ = try? PasswordHash(password: password)
            return false
        }
        return hash.matches(password)
    }

    /// A link that signs `user` in to `container` once, within
    /// ``signInLinkLifetime``: the token of `{public URL}/signin/link/{token}`, for an
    /// operator to hand a user who has no password.
    public func createSignInLink(for user: String, container: String, now: Timestamp = .now()) throws -> String {
        guard try userExists(user) else { throw CumulusError(.invalidArguments, "no user \(user); add it first") }
        guard !container.isEmpty, !container.utf8.contains(0) else {
            throw CumulusError(.invalidArguments, "a sign-in link needs the container it signs in to")
        }
        let token = Self.randomHex(24)
        var value = Array(container.utf8) + [0] + Array(user.utf8) + [0]
        BigEndian.append(UInt64(WebSession.later(now, by: Self.signInLinkLifetime).millisecondsSince1970), to: &value)
        try environment.write { txn in
            try txn.put(table, key: [TokenKind.signInLink.rawValue] + Self.hash(token), value: value)
        }
        return token
    }

    /// Uses up a sign-in link: the user and container it signs in to, or `nil` if it
    /// is unknown, used already or expired. Used or not, it is gone afterwards.
    func redeemSignInLink(_ token: String, now: Timestamp = .now()) throws -> (user: String, container: String)? {
        let key = [TokenKind.signInLink.rawValue] + Self.hash(token)
        let stored = try environment.write { txn -> [UInt8]? in
            let stored = try txn.get(table, key: key)
            if stored != nil { _ = try txn.delete(table, key: key) }
            return stored
        }
        guard let stored, stored.count > 9, let first = stored.firstIndex(of: 0) else { return nil }
        let rest = stored[stored.index(after: first)..<(stored.count - 9)]
        guard stored[stored.count - 9] == 0, let expiry = BigEndian.decode(UInt64.self, from: Array(stored.suffix(8))),
            UInt64(max(0, now.millisecondsSince1970)) < expiry
        else { return nil }
        return (String(decoding: rest, as: UTF8.self), String(decoding: stored[..<first], as: UTF8.self))
    }
}
