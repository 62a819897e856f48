/// The operator of a comparison, as written (before operand order is normalized).
struct PredicateOperator: Sendable {
    /// The operators CloudKit supports; the rest are refused while parsing.
    enum Kind: Sendable, Hashable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
        case between, `in`, beginsWith, contains, tokenMatches
    }

    /// Which operator.
    var kind: Kind
    /// Where it starts.
    var position: Int
    /// Its `[cdw…]` options, lower-cased, if any were written.
    var options: String?
    /// Where the options' `[` is.
    var optionsPosition: Int

    /// The operator as written in messages.
    var name: String {
        switch kind {
        case .equal: "=="
        case .notEqual: "!="
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        case .between: "BETWEEN"
        case .in: "IN"
        case .beginsWith: "BEGINSWITH"
        case .contains: "CONTAINS"
        case .tokenMatches: "TOKENMATCHES"
        }
    }

    /// The same comparison with its operands swapped (`5 < x` is `x > 5`); `nil`
    /// for operators whose sides are not interchangeable.
    var mirrored: Kind? {
        switch kind {
        case .equal: .equal
        case .notEqual: .notEqual
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        default: nil
        }
    }
}
