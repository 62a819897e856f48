/// The change in a query's result that `bisect` looks for.
public enum BisectCondition: String, Sendable, Hashable, CaseIterable {
    /// No record matched before the commit, some do after.
    case becameNonEmpty = "non-empty"
    /// Some matched before, none after.
    case becameEmpty = "empty"
    /// The number of matching records differs before and after.
    case countChanged = "count-changed"

    /// Whether going from `before` to `after` matching records is this change.
    public func holds(before: Int, after: Int) -> Bool {
        switch self {
        case .becameNonEmpty: before == 0 && after > 0
        case .becameEmpty: before > 0 && after == 0
        case .countChanged: before != after
        }
    }
}
