@testable import CumulusServer
import Testing

/// The rate limits' arithmetic, driven by instants of the test's own: no clock, no
/// socket, no waiting.
@Suite("Token buckets")
struct TokenBucketsTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("a client sends its burst at once; the next is refused with the time until a token is back")
    func burstThenRefused() {
        var buckets = TokenBuckets<String>(rate: RequestRate(perSecond: 2, burst: 3), maxKeys: 10)
        for _ in 0..<3 { #expect(buckets.take("a", at: at(0)) == .admitted) }
        #expect(buckets.take("a", at: at(0)) == .refused(retryAfter: .milliseconds(500)))
        // A refusal takes nothing: a quarter of a second later, a quarter to wait.
        #expect(buckets.take("a", at: at(0.25)) == .refused(retryAfter: .milliseconds(250)))
    }

    @Test("tokens come back at the rate, never past the burst")
    func refillAtTheRateUpToTheBurst() {
        var buckets = TokenBuckets<String>(rate: RequestRate(perSecond: 2, burst: 3), maxKeys: 10)
        for _ in 0..<3 { _ = buckets.take("a", at: at(0)) }
        #expect(buckets.take("a", at: at(0.5)) == .admitted)
        #expect(buckets.take("a", at: at(0.5)) != .admitted)
        // An hour of quiet fills the bucket to its burst, not to 7,200.
        for _ in 0..<3 { #expect(buckets.take("a", at: at(3_600)) == .admitted) }
        #expect(buckets.take("a", at: at(3_600)) != .admitted)
    }

    @Test("one client's empty bucket does not hold back another")
    func keysAreIndependent() {
        var buckets = TokenBuckets<String>(rate: RequestRate(perSecond: 1, burst: 1), maxKeys: 10)
        #expect(buckets.take("a", at: at(0)) == .admitted)
        #expect(buckets.take("a", at: at(0)) != .admitted)
        #expect(buckets.take("b", at: at(0)) == .admitted)
    }

    @Test("a clock read out of order adds no tokens")
    func instantsOutOfOrder() {
        var buckets = TokenBuckets<String>(rate: RequestRate(perSecond: 1, burst: 1), maxKeys: 10)
        #expect(buckets.take("a", at: at(10)) == .admitted)
        #expect(buckets.take("a", at: at(5)) == .refused(retryAfter: .seconds(1)))
    }

    @Test("an unlimited rate admits everything and keeps nothing")
    func unlimited() {
        var buckets = TokenBuckets<Int>(rate: .unlimited, maxKeys: 1)
        for key in 0..<1_000 { #expect(buckets.take(key, at: at(0)) == .admitted) }
        #expect(buckets.count == 0)
    }

    @Test("buckets full again are dropped at the next sweep: memory follows the clients still sending")
    func idleBucketsAreEvicted() {
        // Refill time: 4 / 2 = 2 s.
        var buckets = TokenBuckets<Int>(rate: RequestRate(perSecond: 2, burst: 4), maxKeys: 1_000)
        for key in 0..<100 { _ = buckets.take(key, at: at(0)) }
        #expect(buckets.count == 100)
        // Key 0 keeps sending; the others go quiet and are full by 2 s.
        _ = buckets.take(0, at: at(1.9))
        _ = buckets.take(0, at: at(1.9))
        _ = buckets.take(0, at: at(2.1))
        #expect(buckets.count == 1)
    }

    @Test("a flood of new keys past the cap is refused until the sweep after they go quiet; kept clients are served")
    func keysAreCapped() {
        var buckets = TokenBuckets<Int>(rate: RequestRate(perSecond: 1, burst: 2), maxKeys: 3)
        for key in 0..<3 { #expect(buckets.take(key, at: at(0)) == .admitted) }
        // The next sweep is at 2 s (refill time 2 / 1).
        #expect(buckets.take(99, at: at(0.5)) == .refused(retryAfter: .milliseconds(1_500)))
        #expect(buckets.count == 3)
        #expect(buckets.take(0, at: at(1.5)) == .admitted)
        // At 2 s, keys 1 and 2 are full and dropped; key 0 (last seen at 1.5 s) is not.
        #expect(buckets.take(99, at: at(2)) == .admitted)
        #expect(buckets.count == 2)
    }

    @Test("a refusal's wait becomes whole seconds, at least one, as CloudKit's retryAfter")
    func retryAfterIsWholeSeconds() {
        #expect(Throttled("", retryAfter: .milliseconds(1)).retryAfter == 1)
        #expect(Throttled("", retryAfter: .zero).retryAfter == 1)
        #expect(Throttled("", retryAfter: .seconds(2)).retryAfter == 2)
        #expect(Throttled("", retryAfter: .milliseconds(2_001)).retryAfter == 3)
    }
}
