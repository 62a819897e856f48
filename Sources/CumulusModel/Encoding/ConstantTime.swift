/// Comparisons of secrets whose time does not depend on where they differ, so a
/// caller cannot learn a secret byte by byte from response times.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes (lengths are not secret).
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
