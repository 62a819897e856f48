/// What a zone supports (`Docs/DATA-MODEL.md`, "Zones"); raw values are CloudKit's capability bits.
public struct ZoneCapabilities: OptionSet, Sendable, Hashable, Codable {
    /// The raw bit set.
    public var rawValue: UInt32
    /// Capabilities from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Changes can be fetched with tokens (Cumulus offers feeds in every zone).
    public static let fetchChanges = ZoneCapabilities(rawValue: 1)
    /// Modify operations are all-or-nothing.
    public static let atomic = ZoneCapabilities(rawValue: 2)
    /// Record hierarchies can be shared.
    public static let sharing = ZoneCapabilities(rawValue: 4)
    /// The whole zone can be shared.
    public static let zoneWideSharing = ZoneCapabilities(rawValue: 8)

    /// What a new custom zone gets.
    public static let customZoneDefault: ZoneCapabilities = [.fetchChanges, .atomic, .sharing, .zoneWideSharing]
    /// The default zone has none (CloudKit), though Cumulus still keeps its feed.
    public static let defaultZone: ZoneCapabilities = []
}
