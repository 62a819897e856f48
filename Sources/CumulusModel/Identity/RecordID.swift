import Foundation

/// A record's identity: its name within a zone, unique within a database
/// (`Docs/DATA-MODEL.md`, "Records").
public struct RecordID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The record's name: 1–255 ASCII characters, not starting with `_`.
    public var recordName: String
    /// The zone the record lives in.
    public var zoneID: ZoneID

    /// A record ID; without a name it gets a fresh UUID string, as CloudKit does.
    public init(recordName: String = UUID.random().uuidString, zoneID: ZoneID = .default) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    /// Hashes the record name alone. Planning a save looks records up by ID in
    /// several dictionaries and sets, and hashing the zone's two names as well
    /// tripled the hashing for nothing: IDs that differ only by zone are rare, and
    /// equality still compares the zone.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(recordName)
    }

    /// Orders by zone, then record name (UTF-8 bytes): the order pages are broken by.
    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        if lhs.zoneID != rhs.zoneID { return lhs.zoneID < rhs.zoneID }
        return UTF8Order.precedes(lhs.recordName, rhs.recordName)
    }

    /// `recordName@zoneName:ownerName`.
    public var description: String { "\(recordName)@\(zoneID)" }
}
