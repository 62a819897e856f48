import CumulusModel

/// A zone in a user's shared database (`Docs/DATA-MODEL.md`, "Sharing"): another user's zone that a share
/// opens to them, or did until `changedAt`.
public struct SharedZone: Sendable, Hashable {
    /// Whether the user has the zone now.
    public enum Status: UInt8, Sendable {
        /// They accepted a share of it that is still in force.
        case accepted = 1
        /// They left, were removed, or every share of it was deleted.
        case removed = 2
    }

    /// The owner's private database, where the records live.
    public var ownerDatabase: DatabaseID
    /// The zone, as its owner's database stores it.
    public var zoneID: ZoneID
    /// Accepted or removed.
    public var status: Status
    /// The most the user's shares of the zone allow (for a removed zone, what they allowed).
    public var permission: SharePermission
    /// The commit that last changed the user's access to the zone.
    public var changedAt: UInt64

    /// A shared zone row.
    public init(ownerDatabase: DatabaseID, zoneID: ZoneID, status: Status, permission: SharePermission, changedAt: UInt64) {
        self.ownerDatabase = ownerDatabase
        self.zoneID = zoneID
        self.status = status
        self.permission = permission
        self.changedAt = changedAt
    }

    /// The `sharedZones` value.
    var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.u64(changedAt)
        writer.u8(status.rawValue)
        writer.u8(permission.rawValue)
        writer.databaseID(ownerDatabase)
        writer.zoneID(zoneID)
        return writer.bytes
    }

    /// Reads a `sharedZones` value.
    init(decoding buffer: UnsafeRawBufferPointer) throws {
        var reader = BinaryReader(buffer, context: "shared zone")
        changedAt = try reader.u64()
        let rawStatus = try reader.u8()
        guard let status = Status(rawValue: rawStatus) else { throw reader.failure("unknown shared zone status \(rawStatus)") }
        self.status = status
        let rawPermission = try reader.u8()
        guard let permission = SharePermission(rawValue: rawPermission) else {
            throw reader.failure("unknown share permission \(rawPermission)")
        }
        self.permission = permission
        ownerDatabase = try reader.databaseID()
        zoneID = try reader.zoneID()
        try reader.expectEnd()
    }
}
