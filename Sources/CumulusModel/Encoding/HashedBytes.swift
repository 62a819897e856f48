/// A byte string as a dictionary or set key, hashed in one call over its bytes.
///
/// **Why.** `[UInt8]`'s own `hash(into:)` feeds the hasher its count and then each
/// byte, one call to `Hasher._combine` per byte (not inlined across modules): a
/// 16-byte zone key cost seventeen calls to look up. On the writer's path, where a
/// commit looks up its zone's and database's feed heads and charges each record to
/// its payer, those lookups were a tenth of a replay's writer thread (`perf`,
/// 2026-11-29). This hashes the bytes as one buffer (`Hasher.combine(bytes:)`).
///
/// Equality is the bytes' equality, as the LMDB keys these stand for are compared:
/// two canonically equivalent but differently encoded names are different keys.
public struct HashedBytes: Hashable, Sendable {
    /// The bytes.
    public let bytes: [UInt8]

    /// `bytes` as a key.
    @inlinable public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Hashes the bytes as one buffer, with their count (so no key is a prefix
    /// collision of another's hashing input).
    @inlinable public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Whether the two hold the same bytes.
    @inlinable public static func == (lhs: HashedBytes, rhs: HashedBytes) -> Bool {
        UTF8Order.compare(lhs.bytes, rhs.bytes) == 0
    }
}
