/// Appends the primitives of Cumulus's binary formats to a byte array.
///
/// Every primitive has exactly one encoding (minimal LEB128 varints, big-endian
/// fixed-width integers, IEEE-754 bits for doubles), which is what makes the
/// record and log encodings deterministic. `Docs/LOG-FORMAT.md` specifies them.
///
/// The primitives are `@inlinable`: the log calls them dozens of times per commit
/// from another module, where an opaque call costs more than the append itself
/// (`Docs/PERFORMANCE.md`).
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    @inlinable public var bytes: [UInt8] { _bytes }
    // Stored under another name so inlinable code can append while `bytes` stays
    // read-only to users (it used to be `public private(set)`).
    @usableFromInline var _bytes: [UInt8]

    /// An empty writer with room for `capacity` bytes.
    @inlinable public init(capacity: Int = 256) {
        _bytes = []
        _bytes.reserveCapacity(capacity)
    }

    /// Number of bytes written so far.
    @inlinable public var count: Int { _bytes.count }

    /// One byte.
    @inlinable public mutating func u8(_ value: UInt8) { _bytes.append(value) }

    /// Four bytes, big-endian.
    @inlinable public mutating func u32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { _bytes.append(contentsOf: $0) }
    }

    /// Eight bytes, big-endian.
    @inlinable public mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { _bytes.append(contentsOf: $0) }
    }

    /// Unsigned LEB128, minimal length (1–10 bytes).
    @inlinable public mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            _bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        _bytes.append(UInt8(v))
    }

    /// A count or length as a varint.
    @inlinable public mutating func length(_ value: Int) { varint(UInt64(value)) }

    /// Signed integer, zig-zag mapped then varint, so small magnitudes stay short.
    @inlinable public mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// A double as its 8 IEEE-754 bytes, big-endian; −0.0 is written as +0.0 so that
    /// values that compare equal encode equal.
    @inlinable public mutating func double(_ value: Double) {
        u64(value == 0 ? 0 : value.bitPattern)
    }

    /// Length-prefixed raw bytes.
    @inlinable public mutating func blob(_ value: some Collection<UInt8>) {
        length(value.count)
        _bytes.append(contentsOf: value)
    }

    /// Length-prefixed UTF-8, byte-exact (no Unicode normalization).
    @inlinable public mutating func string(_ value: String) {
        // Native strings hand out their UTF-8 storage directly; the old
        // `var value = value; value.withUTF8` made the string mutable (a retain, and
        // possibly a copy) just to read it.
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            length(utf8.count)
            _bytes.append(contentsOf: utf8)
        }
        if done == nil {
            // Bridged or otherwise non-contiguous strings: same bytes, slower.
            length(value.utf8.count)
            _bytes.append(contentsOf: value.utf8)
        }
    }

    /// Raw bytes with no length prefix.
    @inlinable public mutating func raw(_ value: some Sequence<UInt8>) {
        _bytes.append(contentsOf: value)
    }
}
