/// Fixed-width big-endian encoding of unsigned integers, so that LMDB's byte-wise key
/// order equals numeric order (`BigEndian.bytes(2) < BigEndian.bytes(10)`).
///
/// Signed integers are deliberately not supported: two's complement puts negative numbers
/// after positive ones in byte order.
public enum BigEndian {
    /// `value` as `T.bitWidth / 8` bytes, most significant first.
    public static func bytes<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> [UInt8] {
        var result: [UInt8] = []
        append(value, to: &result)
        return result
    }

    /// Appends `value`'s big-endian bytes to `bytes`.
    public static func append<T: FixedWidthInteger & UnsignedInteger>(_ value: T, to bytes: inout [UInt8]) {
        let width = T.bitWidth / 8
        bytes.reserveCapacity(bytes.count + width)
        for index in stride(from: width - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (index * 8)))
        }
    }

    /// Reads a `T` from `bytes` at `offset`, or `nil` if fewer than `T.bitWidth / 8` bytes
    /// remain there (keys come from disk: never trap on a short one).
    public static func decode<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, at offset: Int = 0
    ) -> T? {
        let width = T.bitWidth / 8
        guard offset >= 0, offset <= bytes.count - width else { return nil }
        var value: T = 0
        for index in offset..<(offset + width) {
            value = (value << 8) | T(bytes[index])
        }
        return value
    }

    /// Reads a `T` from `bytes` at `offset`, or `nil` if too few bytes remain.
    public static func decode<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type, from bytes: [UInt8], at offset: Int = 0
    ) -> T? {
        bytes.withUnsafeBytes { decode(type, from: $0, at: offset) }
    }
}
