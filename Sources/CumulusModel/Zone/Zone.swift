/// A record zone (`Docs/DATA-MODEL.md`, "Zones"): its ID and capabilities.
public struct Zone: Sendable, Hashable, Codable {
    /// The zone's identity.
    public var zoneID: ZoneID
    /// What it supports; set by the server when the zone is saved.
    public var capabilities: ZoneCapabilities

    /// A zone; custom zones get every capability, the default zone none.
    public init(zoneID: ZoneID, capabilities: ZoneCapabilities? = nil) {
        self.zoneID = zoneID
        self.capabilities = capabilities ?? (zoneID.isDefaultZone ? .defaultZone : .customZoneDefault)
    }
}
