/// Identity types in the binary formats: the same layout wherever they appear
/// (records, events, commits, tokens). `Docs/LOG-FORMAT.md` §1.
extension BinaryWriter {
    /// `zoneName`, `ownerName` as strings.
    public mutating func zoneID(_ zone: ZoneID) {
        string(zone.zoneName)
        string(zone.ownerName)
    }

    /// `recordName` then the zone.
    public mutating func recordID(_ id: RecordID) {
        string(id.recordName)
        zoneID(id.zoneID)
    }

    /// `container`, environment byte, scope byte, `owner`.
    public mutating func databaseID(_ database: DatabaseID) {
        string(database.container)
        u8(database.environment.rawValue)
        u8(database.scope.rawValue)
        string(database.owner)
    }
}

extension BinaryReader {
    /// Reads what ``BinaryWriter/zoneID(_:)`` wrote.
    public mutating func zoneID() throws -> ZoneID {
        try zoneID(reusing: nil)
    }

    /// Reads what ``BinaryWriter/recordID(_:)`` wrote.
    public mutating func recordID() throws -> RecordID {
        try recordID(reusing: nil)
    }

    /// A zone ID as ``zoneID()`` reads it, reusing `known`'s strings where they match
    /// (``RecordDecodeHints``).
    mutating func zoneID(reusing known: ZoneID?) throws -> ZoneID {
        let name = try string(reusing: known?.zoneName)
        return ZoneID(zoneName: name, ownerName: try string(reusing: known?.ownerName))
    }

    /// A record ID as ``recordID()`` reads it, reusing `known`'s strings where they match.
    mutating func recordID(reusing known: RecordID?) throws -> RecordID {
        let name = try string(reusing: known?.recordName)
        return RecordID(recordName: name, zoneID: try zoneID(reusing: known?.zoneID))
    }

    /// Reads what ``BinaryWriter/databaseID(_:)`` wrote; the public database must
    /// have an empty owner, so the encoding stays canonical.
    public mutating func databaseID() throws -> DatabaseID {
        let container = try string()
        let rawEnvironment = try u8()
        guard let environment = DatabaseID.Environment(rawValue: rawEnvironment) else {
            throw failure("unknown environment \(rawEnvironment)")
        }
        let rawScope = try u8()
        guard let scope = DatabaseScope(rawValue: rawScope) else { throw failure("unknown database scope \(rawScope)") }
        let owner = try string()
        if scope == .public && !owner.isEmpty { throw failure("the public database has no owner") }
        return DatabaseID(container: container, environment: environment, scope: scope, owner: owner)
    }
}
