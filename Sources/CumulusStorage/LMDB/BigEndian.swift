/// Fixed-width big-endian encoding of unsigned integers, so that LMDB's byte-wise key
/// order equals numeric order (`BigEndian.bytes(2) < BigEndian.bytes(10)`).
///
/// Signed integers are deliberately not supported: two's complement puts negative numbers
/// after positive ones in byte order.
///
/// Everything here is `@inlinable`: the functions are generic, and called from another
/// module without their bodies they ran unspecialized, through protocol witnesses for
/// every byte — about 7 % of a log append's CPU time (`Docs/PERFORMANCE.md`).
public enum BigEndian {
    /// `value` as `T.bitWidth / 8` bytes, most significant first.
    @inlinable public static func bytes<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Appends `value`'s big-endian bytes to `bytes`.
    @inlinable public static func append<T: FixedWidthInteger & UnsignedInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Reads a `T` from `bytes` at `offset`, or `nil` if fewer than `T.bitWidth / 8` bytes
    /// remain there (keys come from disk: never trap on a short one).
    @inlinable public static func decode<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, at offset: Int = 0
    ) -> T? {
        let width = T.bitWidth / 8
        guard offset >= 0, offset <= bytes.count - width else { return nil }
        return T(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// Reads a `T` from `bytes` at `offset`, or `nil` if too few bytes remain.
    @inlinable public static func decode<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type, from bytes: [UInt8], at offset: Int = 0
    ) -> T? {
        bytes.withUnsafeBytes { decode(type, from: $0, at: offset) }
    }
}
