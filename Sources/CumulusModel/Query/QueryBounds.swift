/// How much one query (or query subscription) may ask for (issue 40). CloudKit
/// publishes no such numbers; these are ours, chosen so that no well-formed query
/// of a real app comes near them while one request's filters stay cheap to
/// evaluate on every record it reads. `Docs/SECURITY.md` lists them with the rest.
public enum QueryBounds {
    /// Most filters in one query.
    public static let maxFilters = 64
    /// Most filters in one query subscription: every save of the type is matched
    /// against them, in the writer, for every such subscription.
    public static let maxSubscriptionFilters = 16
    /// Most values in the list of one `IN`-like filter (``QueryComparator/testsMembership``).
    public static let maxFilterValues = 1_000
    /// Most distinct tokens in one token filter (`CONTAINS_ALL_TOKENS`, `CONTAINS_ANY_TOKENS`).
    public static let maxFilterTokens = 100

    /// Throws `limitExceeded`, naming the bound, unless `query` keeps within them
    /// (`maxFilters` filters, or ``maxSubscriptionFilters`` for a subscription's query).
    public static func check(_ query: Query, maxFilters: Int = QueryBounds.maxFilters) throws {
        guard query.filters.count <= maxFilters else {
            throw CumulusError(
                .limitExceeded, "the query has \(query.filters.count) filters; at most \(maxFilters) are allowed")
        }
        for filter in query.filters {
            if filter.comparator.testsMembership {
                let count = filter.value.scalars.count
                guard count <= maxFilterValues else {
                    throw CumulusError(
                        .limitExceeded,
                        "the \(filter.comparator.rawValue) filter on \(filter.key) lists \(count) values; at most \(maxFilterValues) are allowed",
                        field: filter.key.description)
                }
            }
            if let tokens = filter.tokens?.count {
                guard tokens <= maxFilterTokens else {
                    throw CumulusError(
                        .limitExceeded,
                        "the \(filter.comparator.rawValue) filter has \(tokens) distinct tokens; at most \(maxFilterTokens) are allowed",
                        field: filter.key.description)
                }
            }
        }
    }
}
