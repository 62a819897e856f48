extension QueryFilter {
    /// The filter dictionary `{"comparator", "fieldName" | "systemFieldName", "fieldValue", "distance"?}`.
    public var wireJSON: JSONValue {
        var members = key.wireMembers
        members["comparator"] = .string(comparator.rawValue)
        members["fieldValue"] = value.wireField
        if let distance { members["distance"] = .double(distance) }
        return .object(members)
    }

    /// Reads a filter dictionary; references without a zone point into `defaultZone`.
    ///
    /// `NEAR` needs a location and a non-negative `distance`; token and
    /// `BEGINS_WITH`-style comparators need a string. A scalar given to a comparator
    /// that takes a list (`IN`, `LIST_CONTAINS_ANY`…) is read as a one-element list.
    public init(wire json: JSONValue, defaultZone: ZoneID = .default) throws {
        guard case .object(let members) = json else {
            throw CumulusError(.invalidArguments, "a filter must be an object, got \(json.kindName)")
        }
        guard let comparatorName = members["comparator"]?.stringValue else {
            throw CumulusError(.invalidArguments, "a filter needs a string comparator")
        }
        guard let comparator = QueryComparator(rawValue: comparatorName.uppercased()) else {
            throw CumulusError(.invalidArguments, "unknown filter comparator '\(comparatorName)'")
        }
        let key = try QueryKey(wireMembers: members, what: "a \(comparator.rawValue) filter")
        let field = key.description
        guard let fieldValue = members["fieldValue"], fieldValue != .null else {
            throw CumulusError.wire(field, "a \(comparator.rawValue) filter needs a fieldValue")
        }
        var value = try FieldValue(wireField: fieldValue, field: field, defaultZone: defaultZone)
        var distance: Double?
        if let member = members["distance"], member != .null {
            guard let d = member.doubleValue, d.isFinite, d >= 0 else {
                throw CumulusError.wire(field, "distance must be a non-negative number of metres")
            }
            distance = d
        }
        switch comparator {
        case .near:
            guard case .location = value else { throw CumulusError.wire(field, "NEAR needs a LOCATION fieldValue") }
            guard distance != nil else { throw CumulusError.wire(field, "NEAR needs a distance") }
        case .containsAllTokens, .containsAnyTokens, .beginsWith, .notBeginsWith, .listMemberBeginsWith,
            .notListMemberBeginsWith:
            guard case .string = value else {
                throw CumulusError.wire(field, "\(comparator.rawValue) needs a STRING fieldValue")
            }
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll:
            if case .list = value {} else { value = .list([value]) }
        case .listContains, .notListContains:
            if case .list = value { throw CumulusError.wire(field, "\(comparator.rawValue) needs a single value, not a list") }
        case .equals, .notEquals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            break
        }
        self.init(key: key, comparator: comparator, value: value, distance: distance)
    }
}
