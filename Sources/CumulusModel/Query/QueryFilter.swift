/// One condition of a query; a query's filters are ANDed (CloudKit has no OR).
public struct QueryFilter: Sendable, Hashable {
    /// What is compared.
    public var key: QueryKey
    /// How.
    public var comparator: QueryComparator
    /// With what: a scalar, or a list for `IN`-like comparators, or a location for
    /// `NEAR`, or a string of tokens for token comparators. References compare by
    /// record ID only; their action is ignored.
    public var value: FieldValue
    /// For `NEAR`: the radius in metres (the match is distance < radius).
    public var distance: Double?

    /// A filter.
    public init(key: QueryKey, comparator: QueryComparator, value: FieldValue, distance: Double? = nil) {
        self.key = key
        self.comparator = comparator
        self.value = value
        self.distance = distance
    }
}

/// One sort key; ties are always broken by record name so pages are stable.
public struct QuerySort: Sendable, Hashable {
    /// What to sort by.
    public var key: QueryKey
    /// Ascending (default) or descending.
    public var ascending: Bool
    /// For a location field: sort by distance from here (nearest first when ascending).
    public var relativeLocation: Location?

    /// A sort descriptor.
    public init(key: QueryKey, ascending: Bool = true, relativeLocation: Location? = nil) {
        self.key = key
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}

/// A query (SPEC §5): a record type, filters (ANDed), sort descriptors.
public struct Query: Sendable, Hashable {
    /// The record type searched.
    public var recordType: String
    /// The conditions, all of which must hold.
    public var filters: [QueryFilter]
    /// Sort descriptors, applied in order, then record name.
    public var sort: [QuerySort]
    /// `FALSEPREDICATE`: matches nothing.
    public var matchesNothing: Bool

    /// A query.
    public init(recordType: String, filters: [QueryFilter] = [], sort: [QuerySort] = [], matchesNothing: Bool = false) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
        self.matchesNothing = matchesNothing
    }
}
