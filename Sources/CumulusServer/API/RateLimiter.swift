import Synchronization

/// The request rate limits (``APILimits/requestsPerUser``,
/// ``APILimits/requestsPerAddress``): one bucket table per kind of client, each behind
/// its own lock, and the clock they read.
///
/// A signed-in request is charged to its user (keyed by container and user record
/// name, so one user's buckets in two containers are two); any other — an API token
/// alone, a server-to-server key, credentials that fail — to the address it came
/// from. A request with no address (called in process) is not charged to one.
///
/// Thread rules: any thread; each take holds one table's lock for O(1), or O(keys)
/// when that table sweeps (at most once per refill time).
final class RateLimiter: Sendable {
    private let users: Mutex<TokenBuckets<String>>
    private let addresses: Mutex<TokenBuckets<String>>
    /// The clock: `ContinuousClock.now`, or a test's.
    let now: @Sendable () -> ContinuousClock.Instant

    /// Limiters at `limits`' rates, reading `now`.
    init(_ limits: APILimits, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        users = Mutex(TokenBuckets(rate: limits.requestsPerUser, maxKeys: limits.rateLimitedClients))
        addresses = Mutex(TokenBuckets(rate: limits.requestsPerAddress, maxKeys: limits.rateLimitedClients))
        self.now = now
    }

    /// One request of `user` in `container`: `nil` if admitted, else how long to wait.
    func takeUser(_ user: String, in container: String) -> Duration? {
        let instant = now()
        return Self.wait(users.withLock { $0.take(container + "\u{0}" + user, at: instant) })
    }

    /// One request from `address`: `nil` if admitted, else how long to wait.
    func takeAddress(_ address: String) -> Duration? {
        let instant = now()
        return Self.wait(addresses.withLock { $0.take(address, at: instant) })
    }

    private static func wait(_ decision: TokenBuckets<String>.Decision) -> Duration? {
        switch decision {
        case .admitted: return nil
        case .refused(let retryAfter): return retryAfter
        }
    }
}
