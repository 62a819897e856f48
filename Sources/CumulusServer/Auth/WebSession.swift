import CumulusModel
import CumulusStorage

/// How long a web auth token lasts (`Docs/HTTP-API.md`, "Authentication"): as CloudKit's, 30 minutes
/// after its last use, or two weeks from sign-in with "keep me signed in". Tokens an
/// operator mints (`cumulus tokens create --user`, `users add`) are for scripts and last
/// until revoked.
public enum WebSession: UInt8, Sendable, Equatable {
    /// Until revoked.
    case unlimited = 0
    /// ``idleLifetime`` after its last use.
    case idle = 1
    /// ``keptLifetime`` from sign-in.
    case kept = 2

    /// How long an idle session lasts unused.
    public static let idleLifetime: Duration = .seconds(30 * 60)
    /// How long a kept session lasts.
    public static let keptLifetime: Duration = .seconds(14 * 24 * 3_600)
    /// How stale an idle session's expiry may get before a use moves it on: one write
    /// per token per five minutes of use, not one per request.
    static let refreshAfter: Duration = .seconds(5 * 60)

    /// The expiry a session of this kind starts with at `now` (`nil`: none).
    func expiry(from now: Timestamp) -> Timestamp? {
        switch self {
        case .unlimited: nil
        case .idle: Self.later(now, by: Self.idleLifetime)
        case .kept: Self.later(now, by: Self.keptLifetime)
        }
    }

    static func later(_ time: Timestamp, by duration: Duration) -> Timestamp {
        Timestamp(millisecondsSince1970: time.millisecondsSince1970 + duration.components.seconds * 1_000)
    }
}

/// A web auth token's row in the `auth` table:
/// `container ‖ 0 ‖ user [‖ 0 ‖ u8 session ‖ u64 expiry ms]`. Rows without the tail
/// (minted before sessions) last until revoked, as ``WebSession/unlimited`` ones do;
/// rows without the container (minted before tokens were bound to one) open nothing.
struct WebTokenRow: Sendable, Equatable {
    var container: String
    var user: String
    var session: WebSession
    var expires: Timestamp?

    init(container: String, user: String, session: WebSession, expires: Timestamp?) {
        self.container = container
        self.user = user
        self.session = session
        self.expires = expires
    }

    init?(_ stored: [UInt8]) {
        guard let first = stored.firstIndex(of: 0) else { return nil }
        container = String(decoding: stored[..<first], as: UTF8.self)
        let rest = stored[stored.index(after: first)...]
        guard let second = rest.firstIndex(of: 0) else {
            user = String(decoding: rest, as: UTF8.self)
            session = .unlimited
            expires = nil
            return
        }
        user = String(decoding: rest[..<second], as: UTF8.self)
        let tail = Array(rest[rest.index(after: second)...])
        guard tail.count == 9, let session = WebSession(rawValue: tail[0]),
            let expiry = BigEndian.decode(UInt64.self, from: tail, at: 1)
        else { return nil }
        self.session = session
        expires = session == .unlimited ? nil : Timestamp(millisecondsSince1970: Int64(clamping: expiry))
    }

    var encoded: [UInt8] {
        var bytes = Array(container.utf8) + [0] + Array(user.utf8)
        guard session != .unlimited, let expires else { return bytes }
        bytes += [0, session.rawValue]
        BigEndian.append(UInt64(max(0, expires.millisecondsSince1970)), to: &bytes)
        return bytes
    }

    /// Whether it signs its user in at `now`.
    func isLive(at now: Timestamp) -> Bool {
        expires.map { now < $0 } ?? true
    }
}
