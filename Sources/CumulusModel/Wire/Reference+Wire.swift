extension Reference.Action {
    /// `NONE`, `DELETE_SELF` or `VALIDATE`.
    public var wireName: String {
        switch self {
        case .none: "NONE"
        case .deleteSelf: "DELETE_SELF"
        case .validate: "VALIDATE"
        }
    }

    /// The action a wire name spells, if any.
    public init?(wireName: String) {
        switch wireName {
        case "NONE": self = .none
        case "DELETE_SELF": self = .deleteSelf
        case "VALIDATE": self = .validate
        default: return nil
        }
    }
}

extension Reference {
    /// The reference dictionary `{"recordName", "zoneID", "action"}`.
    public var wireJSON: JSONValue {
        [
            "recordName": .string(recordID.recordName),
            "zoneID": recordID.zoneID.wireJSON,
            "action": .string(action.wireName),
        ]
    }

    /// Reads a reference dictionary. Without `zoneID` it points into `defaultZone`
    /// (the request's zone); without `action` it is `.none`, as in query filters.
    public init(wire json: JSONValue, field: String, defaultZone: ZoneID) throws {
        guard case .object(let members) = json else {
            throw CumulusError.wire(field, "a reference must be an object, got \(json.kindName)")
        }
        guard let recordName = members["recordName"]?.stringValue else {
            throw CumulusError.wire(field, "a reference needs a string recordName")
        }
        var zone = defaultZone
        if let zoneJSON = members["zoneID"], zoneJSON != .null {
            zone = try ZoneID(wire: zoneJSON, field: field, defaultOwner: defaultZone.ownerName)
        }
        var action = Action.none
        switch members["action"] {
        case nil, .null?:
            break
        case .string(let name)?:
            guard let parsed = Action(wireName: name) else {
                throw CumulusError.wire(field, "unknown reference action '\(name)' (NONE, DELETE_SELF or VALIDATE)")
            }
            action = parsed
        case let other?:
            throw CumulusError.wire(field, "a reference's action must be a string, got \(other.kindName)")
        }
        self.init(recordID: RecordID(recordName: recordName, zoneID: zone), action: action)
    }
}
