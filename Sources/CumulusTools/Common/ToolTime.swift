import CumulusModel
import Foundation

/// Times as the tools print and read them: ISO-8601, UTC, milliseconds
/// (`2026-11-22T03:23:14.123Z`).
public enum ToolTime {
    /// `timestamp` as ISO-8601 UTC with milliseconds.
    public static func iso(_ timestamp: Timestamp) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        LineRenderer.iso(timestamp, &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The calendar fields of `timestamp` in UTC (proleptic Gregorian). Computed by
    /// hand rather than with a `DateFormatter`: exports format one per event.
    static func components(_ timestamp: Timestamp) -> (
        year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millisecond: Int
    ) {
        let ms = timestamp.millisecondsSince1970
        let millis = Int(((ms % 1000) + 1000) % 1000)
        let totalSeconds = (ms - Int64(millis)) / 1000
        let days = Int(floorDivide(totalSeconds, 86_400))
        let secondsOfDay = Int(totalSeconds - Int64(days) * 86_400)
        let (year, month, day) = civil(fromDays: days)
        return (year, month, day, secondsOfDay / 3600, secondsOfDay / 60 % 60, secondsOfDay % 60, millis)
    }

    /// Parses an ISO-8601 time (`2026-11-22T03:23:14Z`, with optional fraction and
    /// offset) or a bare date (`2026-11-22`, midnight UTC); `nil` if it is neither.
    public static func parse(_ text: String) -> Timestamp? {
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = withFraction.date(from: text) { return Timestamp(date) }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: text) { return Timestamp(date) }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        if let date = day.date(from: text) { return Timestamp(date) }
        return nil
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    /// Howard Hinnant's days-to-civil: proleptic Gregorian (year, month, day).
    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
