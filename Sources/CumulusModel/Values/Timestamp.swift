import Foundation

/// A point in time at CloudKit's precision: whole milliseconds since 1970-01-01 UTC.
///
/// Storing integers rather than `Date` keeps the encoding exact and deterministic:
/// a `Date` round-trips through floating point and can drift by a microsecond.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Milliseconds since the Unix epoch (negative before 1970).
    public var millisecondsSince1970: Int64

    /// A timestamp from milliseconds since the epoch.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// A timestamp from a `Date`, truncated toward negative infinity to the millisecond.
    /// A `Date` made from whole milliseconds comes back exactly, although its
    /// floating-point form is not exact. Dates beyond ±2^63 ms are clamped.
    public init(_ date: Date) {
        let exact = date.timeIntervalSince1970 * 1000
        let nearest = exact.rounded()
        let ms = abs(exact - nearest) < 1e-3 ? nearest : exact.rounded(.down)
        if ms >= 9.2e18 {
            millisecondsSince1970 = .max
        } else if ms <= -9.2e18 {
            millisecondsSince1970 = .min
        } else if ms.isNaN {
            millisecondsSince1970 = 0
        } else {
            millisecondsSince1970 = Int64(ms)
        }
    }

    /// The current time, to the millisecond.
    public static func now() -> Timestamp { Timestamp(Date()) }

    /// The same instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    /// Orders by time.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// Milliseconds since the epoch, as CloudKit Web Services writes dates.
    public var description: String { "\(millisecondsSince1970)ms" }
}
