/// One side of a comparison.
enum PredicateOperand: Sendable {
    /// A key (identifier, `self` or `%K`); `name` is as written, for messages.
    case key(QueryKey, name: String, position: Int)
    /// A literal, an aggregate `{…}` (a `.list`) or a `%@` value.
    case value(FieldValue, position: Int)
    /// `distanceToLocation:fromLocation:(key, %@)`.
    case distance(key: QueryKey, center: Location, position: Int)

    /// Where the operand starts.
    var position: Int {
        switch self {
        case .key(_, _, let position), .value(_, let position), .distance(_, _, let position): position
        }
    }
}
