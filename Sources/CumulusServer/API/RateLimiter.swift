#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The request rate limits (``APILimits/requestsPerUser``,
/// ``APILimits/requestsPerAddress``): one bucket table per kind of client, each behind
/// its own lock, and the clock they read.
///
/// A signed-in request is charged to its user (keyed by container and user record
/// name, so one user's buckets in two containers are two); any other — an API token
/// alone, a server-to-server key, credentials that fail — to the address it came
/// from. A request with no address (called in process) is not charged to one. An
/// IPv6 address is charged by its /64 (``addressKey(_:)``): that is what one
/// subscriber or one host is handed, so its 2^64 addresses share one bucket.
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
        let key = Self.addressKey(address)
        return Self.wait(addresses.withLock { $0.take(key, at: instant) })
    }

    /// The bucket an address is charged to: an IPv4 address (or one mapped into IPv6)
    /// itself, an IPv6 address its /64 network (`2001:db8:1:2::/64`), anything that
    /// does not parse as an address the text as given.
    static func addressKey(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.utf8.contains(UInt8(ascii: ":")), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        // ::ffff:a.b.c.d is an IPv4 client seen through an IPv6 socket.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    private static func wait(_ decision: TokenBuckets<String>.Decision) -> Duration? {
        switch decision {
        case .admitted: return nil
        case .refused(let retryAfter): return retryAfter
        }
    }
}
