/// Turns one parsed comparison into filters, applying CloudKit's rules about
/// which operand combinations mean what (`Docs/DATA-MODEL.md`, "Queries").
enum PredicateComparison {
    /// The filters `lhs op rhs` stands for; `quantified` is a leading `ANY`/`SOME`.
    static func resolve(
        lhs: PredicateOperand, operator op: PredicateOperator, rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        try checkOptions(op, lhs: lhs)
        if case .distance = lhs {
            return try distance(lhs, op, rhs, quantified: quantified, position: position)
        }
        if case .distance = rhs {
            return try distance(rhs, op, lhs, quantified: quantified, position: position, mirrored: true)
        }
        switch op.kind {
        case .between: return try between(lhs, op, rhs, quantified: quantified, position: position)
        case .in: return try membership(lhs, op, rhs, quantified: quantified, position: position)
        case .beginsWith: return try beginsWith(lhs, op, rhs, quantified: quantified, position: position)
        case .contains: return try contains(lhs, op, rhs, quantified: quantified, position: position)
        case .tokenMatches: return try tokenMatches(lhs, op, rhs, quantified: quantified, position: position)
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual:
            return try relation(lhs, op, rhs, quantified: quantified, position: position)
        }
    }

    /// A list whose elements share one type; `Int64`s mixed with `Double`s become
    /// `Double`s because `{1, 2.5}` plainly means numbers.
    static func homogeneousList(_ items: [FieldValue], at position: Int) throws -> [FieldValue] {
        var types: Set<FieldValue.ValueType> = []
        for item in items {
            guard let type = item.scalarType else {
                throw CumulusError.predicate("a nested list", at: position, hint: "lists cannot nest")
            }
            types.insert(type)
        }
        if types == [.int64, .double] {
            return items.map { if case .int64(let n) = $0 { .double(Double(n)) } else { $0 } }
        }
        guard types.count <= 1 else {
            let names = types.map(\.wireName).sorted().joined(separator: ", ")
            throw CumulusError.predicate("a list mixing \(names)", at: position, hint: "a list holds one type")
        }
        return items
    }

    // MARK: Rules per operator

    /// Options (`[cdw]`) only mean something CloudKit does for token searches,
    /// which are case- and diacritic-insensitive anyway.
    private static func checkOptions(_ op: PredicateOperator, lhs: PredicateOperand) throws {
        guard let options = op.options else { return }
        let allowed: Set<Character>
        switch (op.kind, lhs) {
        case (.tokenMatches, _): allowed = ["c", "d", "w"]
        case (.contains, .key(.allTokens, _, _)): allowed = ["c", "d"]
        default:
            throw CumulusError.predicate(
                "\(op.name)[\(options)] is not supported by CloudKit queries", at: op.optionsPosition,
                hint: op.kind == .contains
                    ? "CONTAINS on a field is list membership and takes no options; string search is self CONTAINS 'text'"
                    : "comparison options are only allowed on TOKENMATCHES and self CONTAINS")
        }
        guard !options.isEmpty, options.allSatisfy(allowed.contains) else {
            throw CumulusError.predicate("the options [\(options)] on \(op.name)", at: op.optionsPosition)
        }
    }

    private static func distance(
        _ function: PredicateOperand, _ op: PredicateOperator, _ other: PredicateOperand,
        quantified: Bool, position: Int, mirrored: Bool = false
    ) throws -> PredicateAtom {
        guard case .distance(let key, let center, _) = function else {
            throw CumulusError.predicate("a malformed distance comparison", at: position)
        }
        if quantified { throw CumulusError.predicate("ANY over a distance function", at: position) }
        let kind = mirrored ? op.mirrored : op.kind
        switch kind {
        case .less, .lessOrEqual:
            break
        case .greater, .greaterOrEqual:
            throw CumulusError.predicate(
                "a distance compared with \(op.name)", at: op.position,
                hint: "CloudKit only tests for inside a circle: distance < radius")
        default:
            throw CumulusError.predicate("a distance compared with \(op.name)", at: op.position, hint: "compare it with < radius")
        }
        let radius: Double
        switch other {
        case .value(.int64(let n), _): radius = Double(n)
        case .value(.double(let d), _): radius = d
        default:
            throw CumulusError.predicate("a distance compared with something other than a number", at: other.position)
        }
        guard radius.isFinite, radius >= 0 else {
            throw CumulusError.predicate("the negative radius \(radius)", at: other.position)
        }
        return PredicateAtom(
            [QueryFilter(key: key, comparator: .near, value: .location(center), distance: radius)],
            notNegatable: "NOT over a distance function")
    }

    private static func between(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        if quantified { throw CumulusError.predicate("ANY with BETWEEN", at: position) }
        let (key, _) = try fieldKey(lhs, op)
        guard case .value(.list(let bounds), let at) = rhs, bounds.count == 2 else {
            throw CumulusError.predicate("BETWEEN without two bounds", at: rhs.position, hint: "write BETWEEN {low, high}")
        }
        return PredicateAtom(
            [
                QueryFilter(key: key, comparator: .greaterThanOrEquals, value: try scalar(bounds[0], at: at)),
                QueryFilter(key: key, comparator: .lessThanOrEquals, value: try scalar(bounds[1], at: at)),
            ],
            notNegatable: "NOT over BETWEEN")
    }

    private static func membership(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        switch (lhs, rhs) {
        case (.key, .value(let list, let at)):
            let (key, _) = try fieldKey(lhs, op)
            guard case .list = list else {
                throw CumulusError.predicate("IN with a single value", at: at, hint: "IN takes a list: {…} or %@ with a list")
            }
            return quantified
                ? PredicateAtom(QueryFilter(key: key, comparator: .listContainsAny, value: list), negatedComparator: .notListContainsAny)
                : PredicateAtom(QueryFilter(key: key, comparator: .in, value: list), negatedComparator: .notIn)
        case (.value(let element, let at), .key):
            // `'red' IN colors` is NSPredicate's spelling of `colors CONTAINS 'red'`.
            if quantified { throw CumulusError.predicate("ANY before a value", at: position) }
            let (key, _) = try fieldKey(rhs, op)
            return PredicateAtom(
                QueryFilter(key: key, comparator: .listContains, value: try scalar(element, at: at)),
                negatedComparator: .notListContains)
        default:
            throw CumulusError.predicate("IN between \(describe(lhs)) and \(describe(rhs))", at: position, hint: "write key IN {…}")
        }
    }

    private static func beginsWith(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        let (key, _) = try fieldKey(lhs, op)
        guard case .value(.string(let prefix), _) = rhs else {
            throw CumulusError.predicate("BEGINSWITH without a string", at: rhs.position)
        }
        return quantified
            ? PredicateAtom(
                QueryFilter(key: key, comparator: .listMemberBeginsWith, value: .string(prefix)),
                negatedComparator: .notListMemberBeginsWith)
            : PredicateAtom(
                QueryFilter(key: key, comparator: .beginsWith, value: .string(prefix)), negatedComparator: .notBeginsWith)
    }

    private static func contains(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        if case .key(.allTokens, _, _) = lhs {
            if quantified { throw CumulusError.predicate("ANY with a token search", at: position) }
            return try tokenSearch(rhs, op)
        }
        if quantified {
            throw CumulusError.predicate(
                "ANY … CONTAINS (a string search) is not supported by CloudKit queries", at: op.position,
                hint: "use list CONTAINS value or ANY list == value")
        }
        let (key, _) = try fieldKey(lhs, op)
        guard case .value(let element, let at) = rhs else {
            throw CumulusError.predicate("CONTAINS without a value", at: rhs.position)
        }
        if case .list = element {
            throw CumulusError.predicate("CONTAINS with a list", at: at, hint: "to match any of several values, write ANY list IN {…}")
        }
        return PredicateAtom(QueryFilter(key: key, comparator: .listContains, value: element), negatedComparator: .notListContains)
    }

    private static func tokenMatches(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        guard case .key(.allTokens, _, _) = lhs else {
            throw CumulusError.predicate("TOKENMATCHES on something other than allTokens", at: lhs.position)
        }
        if quantified { throw CumulusError.predicate("ANY with a token search", at: position) }
        return try tokenSearch(rhs, op)
    }

    private static func tokenSearch(_ rhs: PredicateOperand, _ op: PredicateOperator) throws -> PredicateAtom {
        guard case .value(.string(let text), _) = rhs else {
            throw CumulusError.predicate("a token search (\(op.name)) without a string", at: rhs.position)
        }
        return PredicateAtom(
            [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string(text))],
            notNegatable: "NOT over a token search")
    }

    private static func relation(
        _ lhs: PredicateOperand, _ op: PredicateOperator, _ rhs: PredicateOperand, quantified: Bool, position: Int
    ) throws -> PredicateAtom {
        let keySide: PredicateOperand
        let value: FieldValue
        let valuePosition: Int
        let kind: PredicateOperator.Kind
        switch (lhs, rhs) {
        case (.key, .value(let v, let at)):
            (keySide, value, valuePosition, kind) = (lhs, v, at, op.kind)
        case (.value(let v, let at), .key):
            if quantified { throw CumulusError.predicate("ANY before a value", at: position) }
            (keySide, value, valuePosition, kind) = (rhs, v, at, op.mirrored ?? op.kind)
        default:
            throw CumulusError.predicate(
                "\(op.name) between \(describe(lhs)) and \(describe(rhs))", at: position,
                hint: "a comparison needs one key and one value")
        }
        let (key, _) = try fieldKey(keySide, op)
        if case .list = value {
            throw CumulusError.predicate("\(op.name) with a list", at: valuePosition, hint: "use IN or BETWEEN with lists")
        }
        if quantified {
            guard kind == .equal else {
                throw CumulusError.predicate(
                    "ANY with \(op.name)", at: op.position, hint: "ANY/SOME only work with ==, IN and BEGINSWITH")
            }
            return PredicateAtom(QueryFilter(key: key, comparator: .listContains, value: value), negatedComparator: .notListContains)
        }
        let refusal = "NOT over \(op.name)"
        switch kind {
        case .equal:
            return PredicateAtom(QueryFilter(key: key, comparator: .equals, value: value), negatedComparator: .notEquals)
        case .notEqual:
            return PredicateAtom(QueryFilter(key: key, comparator: .notEquals, value: value), negatedComparator: .equals)
        case .less:
            return PredicateAtom([QueryFilter(key: key, comparator: .lessThan, value: value)], notNegatable: refusal)
        case .lessOrEqual:
            return PredicateAtom([QueryFilter(key: key, comparator: .lessThanOrEquals, value: value)], notNegatable: refusal)
        case .greater:
            return PredicateAtom([QueryFilter(key: key, comparator: .greaterThan, value: value)], notNegatable: refusal)
        default:
            return PredicateAtom([QueryFilter(key: key, comparator: .greaterThanOrEquals, value: value)], notNegatable: refusal)
        }
    }

    // MARK: Helpers

    /// The key of `operand`, which must be a key other than the token pseudo-key.
    private static func fieldKey(_ operand: PredicateOperand, _ op: PredicateOperator) throws -> (QueryKey, String) {
        switch operand {
        case .key(.allTokens, let name, let at):
            throw CumulusError.predicate(
                "\(name) with \(op.name)", at: at, hint: "\(name) only takes CONTAINS or TOKENMATCHES (token search)")
        case .key(let key, let name, _):
            return (key, name)
        default:
            throw CumulusError.predicate("\(op.name) needs a key on its left, not \(describe(operand))", at: operand.position)
        }
    }

    private static func scalar(_ value: FieldValue, at position: Int) throws -> FieldValue {
        if case .list = value { throw CumulusError.predicate("a nested list", at: position) }
        return value
    }

    private static func describe(_ operand: PredicateOperand) -> String {
        switch operand {
        case .key(_, let name, _): "the key '\(name)'"
        case .value(.list, _): "a list"
        case .value: "a value"
        case .distance: "a distance"
        }
    }
}
