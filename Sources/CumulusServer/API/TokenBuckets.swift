/// Token buckets for many clients, one per key (a user, an address): the arithmetic of
/// the request rate limits, with no clock, lock or socket in it. Every event comes
/// with the instant it happens at, so tests drive it with instants of their own.
///
/// A bucket holds up to ``RequestRate/burst`` tokens and gains
/// ``RequestRate/perSecond`` of them per second; a request takes one, or is refused
/// with how long until one is back. Refused requests take nothing, so a client that
/// keeps knocking is let in as soon as its rate allows.
///
/// **Memory is bounded.** A bucket that has refilled is the same as no bucket, so a
/// sweep (at most once per ``RequestRate/refillTime``) drops every full one: what is
/// kept is the clients seen within about that time. And at most `maxKeys` are kept: a
/// new key arriving when that many are active is refused until the next sweep can
/// make room (a flood of distinct addresses is refused, not remembered). Each take
/// is O(1), and each sweep O(keys).
struct TokenBuckets<Key: Hashable & Sendable>: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// What a request gets.
    enum Decision: Equatable, Sendable {
        /// Served: it took a token.
        case admitted
        /// Refused: its bucket is empty, or there is no room for a new one; one
        /// will be there after `retryAfter`.
        case refused(retryAfter: Duration)
    }

    /// The rate each key may send at.
    let rate: RequestRate
    /// The most keys kept at once.
    let maxKeys: Int
    private var buckets: [Key: Bucket] = [:]
    /// When the next sweep may run: by then every bucket kept now is full.
    private var nextSweep: Instant?

    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Instant
    }

    /// Buckets of `rate`, keeping at most `maxKeys` (at least 1).
    init(rate: RequestRate, maxKeys: Int) {
        self.rate = rate
        self.maxKeys = max(maxKeys, 1)
    }

    /// Keys kept now.
    var count: Int { buckets.count }

    /// One request from `key` at `now`.
    mutating func take(_ key: Key, at now: Instant) -> Decision {
        guard rate.isLimited else { return .admitted }
        if nextSweep.map({ now >= $0 }) ?? true { sweep(at: now) }
        var bucket: Bucket
        if let kept = buckets[key] {
            bucket = kept
            bucket.tokens = tokens(in: kept, at: now)
            bucket.updated = max(kept.updated, now)
        } else {
            guard buckets.count < maxKeys else {
                // Every kept bucket is full by the next sweep, which then makes room.
                return .refused(retryAfter: (nextSweep ?? now) - now)
            }
            bucket = Bucket(tokens: Double(rate.burst), updated: now)
        }
        guard bucket.tokens >= 1 else {
            buckets[key] = bucket
            return .refused(retryAfter: .seconds((1 - bucket.tokens) / rate.perSecond))
        }
        bucket.tokens -= 1
        buckets[key] = bucket
        return .admitted
    }

    /// The tokens `bucket` holds at `now`: what it had, plus what came since, at most
    /// a burst. A clock read out of order (`now` before `updated`) adds nothing.
    private func tokens(in bucket: Bucket, at now: Instant) -> Double {
        guard now > bucket.updated else { return bucket.tokens }
        let elapsed = now - bucket.updated
        let seconds = elapsed.seconds
        return min(Double(rate.burst), bucket.tokens + seconds * rate.perSecond)
    }

    /// Drops every bucket that is full at `now`: a client that comes back gets a new
    /// one, just as full.
    private mutating func sweep(at now: Instant) {
        let burst = Double(rate.burst)
        buckets = buckets.filter { tokens(in: $0.value, at: now) < burst }
        nextSweep = now + rate.refillTime
    }
}
