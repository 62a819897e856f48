/// One condition of a query; a query's filters are ANDed (CloudKit has no OR).
public struct QueryFilter: Sendable, Hashable {
    /// What is compared.
    public var key: QueryKey
    /// How.
    public var comparator: QueryComparator {
        didSet { derive() }
    }
    /// With what: a scalar, or a list for `IN`-like comparators, or a location for
    /// `NEAR`, or a string of tokens for token comparators. References compare by
    /// record ID only; their action is ignored.
    public var value: FieldValue {
        didSet { derive() }
    }
    /// For `NEAR`: the radius in metres (the match is distance < radius).
    public var distance: Double?
    /// For the `IN`-like comparators: the value's elements, hashed once per filter
    /// rather than scanned per record (`nil` for the others).
    public private(set) var members: MemberSet?
    /// For the token comparators: the value's tokens, found once per filter rather
    /// than per record (`nil` for the others).
    public private(set) var tokens: Set<String>?

    /// A filter.
    public init(key: QueryKey, comparator: QueryComparator, value: FieldValue, distance: Double? = nil) {
        self.key = key
        self.comparator = comparator
        self.value = value
        self.distance = distance
        derive()
    }

    /// Sets what is derived from the comparator and value.
    private mutating func derive() {
        // A list past the bound is refused by ``QueryBounds`` before anything reads
        // it: no set is built for it.
        let scalars = comparator.testsMembership ? value.scalars : []
        members = comparator.testsMembership && scalars.count <= QueryBounds.maxFilterValues ? MemberSet(scalars) : nil
        if comparator == .containsAllTokens || comparator == .containsAnyTokens, case .string(let text) = value {
            tokens = Tokenizer.tokens(text)
        } else {
            tokens = nil
        }
    }

    /// Filters are equal when they say the same; ``members`` and ``tokens`` are derived.
    public static func == (a: QueryFilter, b: QueryFilter) -> Bool {
        a.key == b.key && a.comparator == b.comparator && a.value == b.value && a.distance == b.distance
    }

    /// Hashes what ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(comparator)
        hasher.combine(value)
        hasher.combine(distance)
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

/// A query (`Docs/DATA-MODEL.md`, "Queries"): a record type, filters (ANDed), sort descriptors.
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
