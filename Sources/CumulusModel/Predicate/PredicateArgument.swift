/// One argument substituted into a predicate format string, in order of the
/// format's `%@` and `%K` placeholders.
public enum PredicateArgument: Sendable, Hashable {
    /// For `%@`: a scalar, a `.list` for `IN %@` / `BETWEEN %@`, a `.reference` for
    /// reference comparisons, a `.location` for `distanceToLocation:fromLocation:`.
    case value(FieldValue)
    /// For `%K`: a field name or a system key name (`creationDate`, `___createTime`…).
    case key(String)
}
