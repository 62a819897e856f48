import Crypto
import CumulusModel

/// Fixed-length keys for databases and zones.
///
/// A zone's full identity (container, environment, scope, owner, zone name, zone
/// owner) can exceed LMDB's 511-byte key limit, so tables key by the first 16
/// bytes of its SHA-256 instead: fixed width (prefix scans stay simple), derived
/// from the identity alone (a rebuild gives the same keys, no counter to keep in
/// step), and 128 bits make a collision practically impossible.
public enum FeedKeys {
    /// Length of a database or zone key.
    public static let length = 16

    /// The key of `database`.
    public static func database(_ database: DatabaseID) -> [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.u8(0x44)  // "D": domain separation from zone keys
        writer.databaseID(database)
        return digest(writer.bytes)
    }

    /// The key of `zone` in `database`.
    public static func zone(_ database: DatabaseID, _ zone: ZoneID) -> [UInt8] {
        var writer = BinaryWriter(capacity: 160)
        writer.u8(0x5A)  // "Z"
        writer.databaseID(database)
        writer.zoneID(zone)
        return digest(writer.bytes)
    }

    static func digest(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes).prefix(length))
    }
}
