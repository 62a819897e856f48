import CumulusModel
import Synchronization

/// What keeps the sign-in page from being a password-guessing oracle (issue 41): a
/// token bucket of attempts per user and one per client address, each refused with
/// `THROTTLED` once spent, whether the attempt would have succeeded or not.
///
/// The client's address is the socket's peer, unless that peer is one of the
/// configured trusted proxies (`serve --trusted-proxy`): then it is the nearest
/// address in `X-Forwarded-For` that is not itself a trusted proxy. A header from
/// anyone else is ignored, so a client cannot choose the address it is counted as.
///
/// Thread rules: any thread; each take holds one table's lock for O(1).
final class SignInGuard: Sendable {
    private let users: Mutex<TokenBuckets<String>>
    private let addresses: Mutex<TokenBuckets<String>>
    private let trustedProxies: Set<String>
    let now: @Sendable () -> ContinuousClock.Instant

    init(_ limits: APILimits, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        users = Mutex(TokenBuckets(rate: limits.signInAttemptsPerUser, maxKeys: limits.rateLimitedClients))
        addresses = Mutex(TokenBuckets(rate: limits.signInAttemptsPerAddress, maxKeys: limits.rateLimitedClients))
        trustedProxies = Set(limits.trustedProxies.map(RateLimiter.addressKey))
        self.now = now
    }

    /// The address `request` came from, as above (`nil`: called in process).
    func clientAddress(of request: APIRequest) -> String? {
        guard let peer = request.clientAddress else { return nil }
        guard trustedProxies.contains(RateLimiter.addressKey(peer)), let forwarded = request.headers["x-forwarded-for"] else {
            return peer
        }
        // Each proxy appends the address it heard from: walk back from the nearest.
        for hop in forwarded.split(separator: ",").reversed() {
            let address = hop.trimmingCharacters(in: .whitespaces)
            if address.isEmpty { continue }
            if !trustedProxies.contains(RateLimiter.addressKey(address)) { return address }
        }
        return peer
    }

    /// One sign-in attempt for `user` from `address`: `nil` if allowed, else how long
    /// to wait. Both buckets are charged, so guessing one user's password from many
    /// addresses, or many users' from one, is as slow as the smaller rate.
    func admit(user: String, address: String?) -> Duration? {
        let instant = now()
        if let address, case .refused(let wait) = addresses.withLock({ $0.take(RateLimiter.addressKey(address), at: instant) }) {
            return wait
        }
        if case .refused(let wait) = users.withLock({ $0.take(user, at: instant) }) { return wait }
        return nil
    }
}
