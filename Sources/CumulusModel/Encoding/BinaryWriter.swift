/// Appends the primitives of Cumulus's binary formats to a byte array.
///
/// Every primitive has exactly one encoding (minimal LEB128 varints, big-endian
/// fixed-width integers, IEEE-754 bits for doubles), which is what makes the
/// record and log encodings deterministic. `Docs/LOG-FORMAT.md` specifies them.
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Number of bytes written so far.
    public var count: Int { bytes.count }

    /// One byte.
    public mutating func u8(_ value: UInt8) { bytes.append(value) }

    /// Four bytes, big-endian.
    public mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Eight bytes, big-endian.
    public mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Unsigned LEB128, minimal length (1–10 bytes).
    public mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// A count or length as a varint.
    public mutating func length(_ value: Int) { varint(UInt64(value)) }

    /// Signed integer, zig-zag mapped then varint, so small magnitudes stay short.
    public mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// A double as its 8 IEEE-754 bytes, big-endian; −0.0 is written as +0.0 so that
    /// values that compare equal encode equal.
    public mutating func double(_ value: Double) {
        u64(value == 0 ? 0 : value.bitPattern)
    }

    /// Length-prefixed raw bytes.
    public mutating func blob(_ value: some Collection<UInt8>) {
        length(value.count)
        bytes.append(contentsOf: value)
    }

    /// Length-prefixed UTF-8, byte-exact (no Unicode normalization).
    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            length(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    /// Raw bytes with no length prefix.
    public mutating func raw(_ value: some Sequence<UInt8>) {
        bytes.append(contentsOf: value)
    }
}
