/// A zone's identity: its name and the user who owns it (`Docs/DATA-MODEL.md`, "Zones").
public struct ZoneID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The default zone's name, present in every database.
    public static let defaultZoneName = "_defaultZone"
    /// Placeholder owner meaning "the current user" (CloudKit's `CKCurrentUserDefaultName`).
    public static let defaultOwnerName = "__defaultOwner__"
    /// The default zone of a database, owned by the placeholder owner.
    public static let `default` = ZoneID(zoneName: defaultZoneName, ownerName: defaultOwnerName)

    /// The zone's name, unique per owner within a database.
    public var zoneName: String
    /// The owner's user record name, or ``defaultOwnerName``.
    public var ownerName: String

    /// A zone ID; the owner defaults to the current-user placeholder.
    public init(zoneName: String, ownerName: String = ZoneID.defaultOwnerName) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// Whether this is the default zone (whatever owner it names).
    public var isDefaultZone: Bool { zoneName == Self.defaultZoneName }

    /// Orders by zone name, then owner, comparing UTF-8 bytes.
    public static func < (lhs: ZoneID, rhs: ZoneID) -> Bool {
        if lhs.zoneName != rhs.zoneName { return UTF8Order.precedes(lhs.zoneName, rhs.zoneName) }
        return UTF8Order.precedes(lhs.ownerName, rhs.ownerName)
    }

    /// `zoneName:ownerName`.
    public var description: String { "\(zoneName):\(ownerName)" }

    /// Whether `other` names this zone byte for byte, as the views' keys do: `==`
    /// compares names as Swift strings (canonical equivalence), under which two zones
    /// whose names differ in bytes would pass for one.
    public func hasSameBytes(as other: ZoneID) -> Bool {
        UTF8Order.compare(zoneName, other.zoneName) == 0 && UTF8Order.compare(ownerName, other.ownerName) == 0
    }
}
