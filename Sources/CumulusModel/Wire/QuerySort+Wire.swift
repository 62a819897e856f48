extension QuerySort {
    /// The sort dictionary `{"fieldName" | "systemFieldName", "ascending", "relativeLocation"?}`.
    public var wireJSON: JSONValue {
        var members = key.wireMembers
        members["ascending"] = .bool(ascending)
        if let relativeLocation { members["relativeLocation"] = FieldValue.location(relativeLocation).wireField }
        return .object(members)
    }

    /// Reads a sort dictionary: `ascending` defaults to `true`; `relativeLocation`
    /// is a LOCATION field dictionary (a bare location dictionary is accepted too).
    public init(wire json: JSONValue) throws {
        guard case .object(let members) = json else {
            throw CumulusError(.invalidArguments, "a sort descriptor must be an object, got \(json.kindName)")
        }
        let key = try QueryKey(wireMembers: members, what: "a sort descriptor")
        var ascending = true
        switch members["ascending"] {
        case nil, .null?: break
        case .bool(let flag)?: ascending = flag
        case let other?:
            throw CumulusError.wire(key.description, "a sort's ascending must be a boolean, got \(other.kindName)")
        }
        var relativeLocation: Location?
        if let member = members["relativeLocation"], member != .null {
            if member["value"] != nil {
                guard case .location(let location) = try FieldValue(wireField: member, field: key.description) else {
                    throw CumulusError.wire(key.description, "relativeLocation must be a LOCATION")
                }
                relativeLocation = location
            } else {
                relativeLocation = try Location(wire: member, field: key.description)
            }
        }
        self.init(key: key, ascending: ascending, relativeLocation: relativeLocation)
    }
}
