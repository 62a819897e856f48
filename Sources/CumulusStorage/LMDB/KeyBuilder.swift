/// Builds composite LMDB keys whose byte order is the intended sort order: integers
/// big-endian (see `BigEndian`), raw byte components as given.
///
/// A plain value; build keys on any thread. Variable-length components sort correctly only
/// as the last component or when all keys share the same lengths — put them last.
public struct KeyBuilder: Sendable, Hashable {
    /// The key built so far.
    public private(set) var bytes: [UInt8]

    /// An empty key with room for `capacity` bytes.
    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends an unsigned integer, big-endian.
    public mutating func append<T: FixedWidthInteger & UnsignedInteger>(_ value: T) {
        BigEndian.append(value, to: &bytes)
    }

    /// Appends raw bytes.
    public mutating func append(bytes other: some Sequence<UInt8>) {
        bytes.append(contentsOf: other)
    }

    /// A builder with `value` appended; for one-expression keys.
    public func appending<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> KeyBuilder {
        var copy = self
        copy.append(value)
        return copy
    }

    /// A builder with `other` appended.
    public func appending(bytes other: some Sequence<UInt8>) -> KeyBuilder {
        var copy = self
        copy.append(bytes: other)
        return copy
    }
}
