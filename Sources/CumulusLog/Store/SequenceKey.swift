/// Big-endian `u64` keys and values, for the log's per-commit paths.
///
/// Same bytes as `BigEndian` (CumulusStorage), made directly: that one is generic and
/// not `@inlinable`, so called from this module it runs unspecialized, through protocol
/// witnesses for every byte — about 7 % of an append's CPU time in a profile of the
/// bulk benchmark (`Docs/PERFORMANCE.md`).
enum SequenceKey {
    /// `value` as 8 bytes, most significant first.
    static func bytes(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// The `u64` in the first 8 bytes of `bytes`, or `nil` if there are fewer
    /// (as `BigEndian.decode(UInt64.self, from:)`: keys come from disk, never trap).
    static func decode(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard bytes.count >= 8 else { return nil }
        return UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
    }
}
