import Crypto
import CumulusModel
import Synchronization

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

/// The feed keys of the zones and databases written most recently.
///
/// Deriving a key costs an encoding and a SHA-256, twice per commit (a zone and a
/// database) on the writer's serial path, and nearly every commit touches a zone
/// that one of the last few commits touched. A handful of entries searched by
/// equality is cheaper than hashing the identities into a dictionary; a miss only
/// costs the derivation. The keys depend on the identity alone, so a cached key is
/// never stale. The views keep one too: every saved or deleted record's view keys
/// start with its zone's key, and a cascade of 100,000 derived it 100,000 times.
public final class FeedKeyCache: Sendable {
    /// Entries kept of each kind; old ones are overwritten round-robin.
    static let capacity = 8

    private struct State {
        var zones: [(database: DatabaseID, zone: ZoneID, key: [UInt8])] = []
        var databases: [(database: DatabaseID, key: [UInt8])] = []
        var nextZone = 0
        var nextDatabase = 0
    }

    // Readers deriving keys for feed fetches may run on any thread beside the writer.
    private let state = Mutex(State())

    // Identities match by their bytes, as the keys are derived from bytes: `==` on
    // strings treats canonically equivalent Unicode as equal, and two such names
    // would have different keys.
    private static func same(_ a: DatabaseID, _ b: DatabaseID) -> Bool {
        a.environment == b.environment && a.scope == b.scope && same(a.container, b.container)
            && same(a.owner, b.owner)
    }

    private static func same(_ a: ZoneID, _ b: ZoneID) -> Bool {
        a.hasSameBytes(as: b)
    }

    private static func same(_ a: String, _ b: String) -> Bool {
        UTF8Order.compare(a, b) == 0
    }

    /// An empty cache.
    public init() {}

    /// `FeedKeys.zone(database, zone)`, from the cache when it was derived recently.
    public func zone(_ database: DatabaseID, _ zone: ZoneID) -> [UInt8] {
        let cached = state.withLock { state in
            state.zones.first { Self.same($0.zone, zone) && Self.same($0.database, database) }?.key
        }
        if let cached { return cached }
        let key = FeedKeys.zone(database, zone)
        state.withLock { state in
            if state.zones.count < Self.capacity {
                state.zones.append((database, zone, key))
            } else {
                state.zones[state.nextZone] = (database, zone, key)
                state.nextZone = (state.nextZone + 1) % Self.capacity
            }
        }
        return key
    }

    /// `FeedKeys.database(database)`, from the cache when it was derived recently.
    public func database(_ database: DatabaseID) -> [UInt8] {
        let cached = state.withLock { state in state.databases.first { Self.same($0.database, database) }?.key }
        if let cached { return cached }
        let key = FeedKeys.database(database)
        state.withLock { state in
            if state.databases.count < Self.capacity {
                state.databases.append((database, key))
            } else {
                state.databases[state.nextDatabase] = (database, key)
                state.nextDatabase = (state.nextDatabase + 1) % Self.capacity
            }
        }
        return key
    }
}
