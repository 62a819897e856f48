extension ZoneID {
    /// The zone ID dictionary `{"zoneName", "ownerRecordName"}`.
    public var wireJSON: JSONValue {
        ["zoneName": .string(zoneName), "ownerRecordName": .string(ownerName)]
    }

    /// Reads a zone ID dictionary. Some clients write `ownerName` instead of
    /// `ownerRecordName` (`Docs/HTTP-API.md`, "What clients send"); a missing owner is
    /// `defaultOwner`.
    public init(wire json: JSONValue, field: String, defaultOwner: String = ZoneID.defaultOwnerName) throws {
        guard case .object(let members) = json else {
            throw CumulusError.wire(field, "zoneID must be an object, got \(json.kindName)")
        }
        guard let zoneName = members["zoneName"]?.stringValue else {
            throw CumulusError.wire(field, "zoneID needs a string zoneName")
        }
        let owner = members["ownerRecordName"] ?? members["ownerName"]
        switch owner {
        case nil, .null?:
            self.init(zoneName: zoneName, ownerName: defaultOwner)
        case .string(let name)?:
            self.init(zoneName: zoneName, ownerName: name)
        case let other?:
            throw CumulusError.wire(field, "zoneID's ownerRecordName must be a string, got \(other.kindName)")
        }
    }
}
