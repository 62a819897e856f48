/// One comparison resolved to filters, with what it means under `NOT`.
struct PredicateAtom: Sendable {
    /// The filters (ANDed) the comparison stands for; two for `BETWEEN`.
    var filters: [QueryFilter]
    /// The filters of its negation, when CloudKit can express it.
    var negated: [QueryFilter]?
    /// The construct named when a `NOT` over it is refused.
    var negationRefusal: String

    /// A comparison whose negation is a single filter with `negatedComparator`.
    init(_ filter: QueryFilter, negatedComparator: QueryComparator) {
        filters = [filter]
        var negation = filter
        negation.comparator = negatedComparator
        negated = [negation]
        negationRefusal = ""
    }

    /// A comparison that CloudKit cannot negate; `refusal` names it.
    init(_ filters: [QueryFilter], notNegatable refusal: String) {
        self.filters = filters
        negated = nil
        negationRefusal = refusal
    }
}
