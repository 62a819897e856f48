import CumulusModel
import Crypto
import Foundation
import Synchronization

/// The console's signed-in browsers, in this node's memory: a session is a random
/// token the browser holds in an HttpOnly, SameSite=Strict cookie (never in a URL, so
/// never in history or logs), and a CSRF token each of its writes must send back in a
/// header, which a page of another site can neither read nor guess.
///
/// Kept in memory only: a restart signs everyone out, and no session secret reaches
/// the disk or a follower. Only SHA-256 digests of tokens are kept, so a memory dump
/// hands out no cookie. Sessions end after ``idleLifetime`` unused; at most
/// ``capacity`` are kept, the least recently used going first.
public final class ConsoleSessions: Sendable {
    /// A signed-in browser.
    public struct Session: Sendable, Equatable {
        /// The user signed in.
        public var user: String
        /// Whether the user is an operator (may open the operator pages).
        public var isOperator: Bool
        /// What each write of the session sends in ``ConsoleSessions/csrfHeader``.
        public var csrf: String
        /// The user an operator acts as (reads only, each start recorded), or `nil`.
        public var actingAs: String?
        /// Whose data the session's database calls read and write: the user acted as,
        /// else the user signed in.
        public var effectiveUser: String { actingAs ?? user }
        /// When it ends unless used before.
        var expires: ContinuousClock.Instant
    }

    /// How long a session lasts unused.
    public static let idleLifetime: Duration = .seconds(30 * 60)
    /// Most sessions kept at once.
    public static let capacity = 1_024
    /// The session cookie's name.
    public static let cookie = "cumulus_console"
    /// The header a write carries its CSRF token in.
    public static let csrfHeader = "x-cumulus-csrf"

    private let sessions = Mutex<[[UInt8]: Session]>([:])
    /// Live log streams open now (``openLogStream()``).
    private let logStreams = Mutex(0)

    /// Most live log streams open at once on a node: each holds a connection and wakes
    /// at every commit.
    public static let maxLogStreams = 8

    /// A live log stream's place, given back when the stream (which holds it) ends.
    public final class LogStreamSlot: Sendable {
        private let release: @Sendable () -> Void
        init(release: @escaping @Sendable () -> Void) { self.release = release }
        deinit { release() }
    }

    /// A place for one more live log stream, or `nil` when ``maxLogStreams`` are open.
    public func openLogStream() -> LogStreamSlot? {
        let opened = logStreams.withLock { open -> Bool in
            guard open < Self.maxLogStreams else { return false }
            open += 1
            return true
        }
        guard opened else { return nil }
        return LogStreamSlot { [self] in logStreams.withLock { $0 -= 1 } }
    }

    /// No one signed in.
    public init() {}

    /// Starts a session for `user`; returns its cookie token and the session.
    public func start(user: String, isOperator: Bool) -> (token: String, session: Session) {
        let token = AuthStore.randomHex(32)
        let session = Session(
            user: user, isOperator: isOperator, csrf: AuthStore.randomHex(16), expires: .now + Self.idleLifetime)
        sessions.withLock { sessions in
            let now = ContinuousClock.now
            sessions = sessions.filter { $0.value.expires > now }
            if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires })?.key {
                sessions[oldest] = nil
            }
            sessions[Self.digest(token)] = session
        }
        return (token, session)
    }

    /// The live session `token` names, its idle time moved on; `nil` if none.
    public func session(_ token: String) -> Session? {
        let key = Self.digest(token)
        return sessions.withLock { sessions in
            guard var session = sessions[key] else { return nil }
            guard session.expires > .now else {
                sessions[key] = nil
                return nil
            }
            session.expires = .now + Self.idleLifetime
            sessions[key] = session
            return session
        }
    }

    /// Makes the session `token` names act as `user` (`nil`: as itself again); the
    /// session as changed, or `nil` if there is none.
    public func act(_ token: String, as user: String?) -> Session? {
        sessions.withLock { sessions in
            let key = Self.digest(token)
            guard sessions[key] != nil else { return nil }
            sessions[key]?.actingAs = user
            return sessions[key]
        }
    }

    /// Ends the session `token` names; whether there was one.
    @discardableResult
    public func end(_ token: String) -> Bool {
        sessions.withLock { $0.removeValue(forKey: Self.digest(token)) } != nil
    }

    private static func digest(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }
}
