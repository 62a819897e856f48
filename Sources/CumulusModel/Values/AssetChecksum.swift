/// The name of a stored asset file: the SHA-256 of its bytes (issue 17; `Docs/HTTP-API.md`, "Assets").
///
/// On the wire and on disk it is 64 lower-case hexadecimal digits (an asset's
/// `fileChecksum`, the file's name in the asset store); in view keys, the 32 bytes.
/// Any other `fileChecksum` text names no file this server stores.
public struct AssetChecksum: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 32 bytes of the digest.
    public let bytes: [UInt8]

    /// Length of the digest in bytes.
    public static let byteCount = 32

    /// A checksum from its 32 bytes; `nil` for another length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A checksum from 64 lower-case hexadecimal digits; `nil` for anything else (so
    /// one file has exactly one name).
    public init?(hex: String) {
        guard hex.utf8.count == Self.byteCount * 2,
            hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            let bytes = Hex.decode(hex)
        else { return nil }
        self.bytes = bytes
    }

    /// The 64 lower-case hexadecimal digits.
    public var hex: String { Hex.encode(bytes) }

    /// The hex digits.
    public var description: String { hex }

    /// Byte order, which is the order of the hex names.
    public static func < (lhs: AssetChecksum, rhs: AssetChecksum) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
