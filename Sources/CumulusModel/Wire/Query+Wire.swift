extension Query {
    /// The filter Web Services uses for `matchesNothing`, which it cannot say
    /// directly: record name in the empty list. Reading it back restores the flag.
    static let matchesNothingFilter = QueryFilter(key: .recordName, comparator: .in, value: .list([]))

    /// The query dictionary `{"recordType", "filterBy", "sortBy"}`.
    public var wireJSON: JSONValue {
        var filterBy = filters.map(\.wireJSON)
        if matchesNothing { filterBy.append(Self.matchesNothingFilter.wireJSON) }
        return [
            "recordType": .string(recordType),
            "filterBy": .array(filterBy),
            "sortBy": .array(sort.map(\.wireJSON)),
        ]
    }

    /// Reads a query dictionary; `filterBy` and `sortBy` are optional.
    public init(wire json: JSONValue, defaultZone: ZoneID = .default) throws {
        guard case .object(let members) = json else {
            throw CumulusError(.invalidArguments, "a query must be an object, got \(json.kindName)")
        }
        guard let recordType = members["recordType"]?.stringValue, !recordType.isEmpty else {
            throw CumulusError(.invalidArguments, "a query needs a non-empty string recordType")
        }
        func list(_ name: String) throws -> [JSONValue] {
            switch members[name] {
            case nil, .null?: return []
            case .array(let elements)?: return elements
            case let other?: throw CumulusError(.invalidArguments, "a query's \(name) must be an array, got \(other.kindName)")
            }
        }
        var filters = try list("filterBy").map { try QueryFilter(wire: $0, defaultZone: defaultZone) }
        let sort = try list("sortBy").map { try QuerySort(wire: $0) }
        let matchesNothing = filters.contains(Self.matchesNothingFilter)
        if matchesNothing { filters.removeAll { $0 == Self.matchesNothingFilter } }
        self.init(recordType: recordType, filters: filters, sort: sort, matchesNothing: matchesNothing)
    }
}
