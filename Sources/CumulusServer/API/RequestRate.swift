/// How many requests one client may send: a steady `perSecond`, and a `burst` it may
/// send at once after being quiet (a token bucket's refill rate and size). One request
/// takes one token; a bucket that is empty answers `THROTTLED` with when one will be
/// back (``TokenBuckets``).
public struct RequestRate: Sendable, Equatable, CustomStringConvertible {
    /// Tokens added per second; 0 (or less) turns the limit off.
    public var perSecond: Double
    /// Tokens a bucket holds when full: the requests a quiet client may send at once.
    public var burst: Int

    /// A rate of `perSecond` with bursts of up to `burst` (at least 1).
    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = max(burst, 1)
    }

    /// No limit at all.
    public static let unlimited = RequestRate(perSecond: 0, burst: 1)

    /// Whether this rate limits anything.
    public var isLimited: Bool { perSecond > 0 }

    /// How long an empty bucket takes to fill: after that long without a request, a
    /// client's bucket is as good as a new one and need not be kept.
    var refillTime: Duration {
        .seconds(Double(burst) / perSecond)
    }

    /// `50 requests/s, bursts of 200`, for refusals and `--help`.
    public var description: String {
        isLimited ? "\(perSecond.shortText) requests/s, bursts of \(burst)" : "unlimited"
    }
}

extension Double {
    /// `50` rather than `50.0`; a fraction as Swift prints it.
    fileprivate var shortText: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
