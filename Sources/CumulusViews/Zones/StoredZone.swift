import CumulusModel

/// A zone as the `zones` view holds it.
public struct StoredZone: Sendable, Hashable {
    /// The zone and its capabilities.
    public var zone: Zone
    /// The sequence of the commit that created this incarnation of the zone: a zone
    /// deleted and created again under the same name is a new incarnation, which is
    /// how change tokens from before the deletion are told apart.
    public var incarnation: UInt64

    /// A stored zone.
    public init(zone: Zone, incarnation: UInt64) {
        self.zone = zone
        self.incarnation = incarnation
    }
}
