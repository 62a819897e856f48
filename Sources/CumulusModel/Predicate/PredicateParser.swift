/// Parses CloudKit's subset of Apple's predicate format strings
/// (`Docs/DATA-MODEL.md`, "Queries") into the query model, without `NSPredicate`.
///
/// Everything it cannot express as ANDed ``QueryFilter``s is refused with
/// `CumulusError(.invalidArguments)` naming the construct and its position: the
/// 0-based offset, in Unicode scalars, into the format string ("at position 12").
/// Parsing is linear in the input and nests at most 64 parentheses/`NOT`s deep,
/// so any input either parses or fails cleanly.
///
/// Literals: `'…'` or `"…"` strings with the escapes `\'` `\"` `\\` `\n` `\t` `\r`
/// `\0`, `\uXXXX` (UTF-16; surrogate pairs as two escapes) and `\u{X…}` (a scalar);
/// decimal integers (`Int64`; out of range is an error); numbers with a fraction or
/// exponent (`Double`); `TRUE`/`YES` (1) and `FALSE`/`NO` (0); `{a, b, …}` lists of
/// one type (integers mixed with doubles become doubles).
public enum PredicateParser {
    /// Parses `format` into filters (ANDed), or `matchesNothing` for a predicate
    /// that can never hold (`FALSEPREDICATE`, `X AND FALSEPREDICATE`).
    ///
    /// `arguments` replace `%@` (values) and `%K` (keys) in order; each must be used
    /// exactly once.
    public static func parse(
        _ format: String, arguments: [PredicateArgument] = []
    ) throws -> (filters: [QueryFilter], matchesNothing: Bool) {
        let (tokens, failure) = PredicateLexer.tokenize(format)
        var parser = PredicateSyntaxParser(tokens: tokens, lexicalFailure: failure, arguments: arguments)
        let tree = try parser.parse()
        var filters: [QueryFilter] = []
        var matchesNothing = false
        try lower(tree, negatedBy: nil, into: &filters, matchesNothing: &matchesNothing)
        return matchesNothing ? ([], true) : (filters, false)
    }

    /// A query for `recordType` whose filters come from `predicate`.
    public static func query(
        recordType: String, predicate: String, arguments: [PredicateArgument] = [], sort: [QuerySort] = []
    ) throws -> Query {
        let parsed = try parse(predicate, arguments: arguments)
        return Query(recordType: recordType, filters: parsed.filters, sort: sort, matchesNothing: parsed.matchesNothing)
    }

    /// Flattens the tree into ANDed filters. `negatedBy` is the position of an odd
    /// number of enclosing `NOT`s. Recursion is bounded by the parser's depth limit.
    private static func lower(
        _ node: PredicateNode, negatedBy notPosition: Int?, into filters: inout [QueryFilter], matchesNothing: inout Bool
    ) throws {
        switch node {
        case .and(let terms, _):
            if let notPosition {
                throw CumulusError.predicate(
                    "NOT over AND is not supported by CloudKit queries", at: notPosition,
                    hint: "NOT (A AND B) means NOT A OR NOT B, and CloudKit has no OR; run separate queries")
            }
            for term in terms { try lower(term, negatedBy: nil, into: &filters, matchesNothing: &matchesNothing) }
        case .not(let operand, let position):
            try lower(operand, negatedBy: notPosition == nil ? position : nil, into: &filters, matchesNothing: &matchesNothing)
        case .constant(let value, _):
            if value == (notPosition != nil) { matchesNothing = true }
        case .atom(let atom):
            guard let notPosition else {
                filters.append(contentsOf: atom.filters)
                return
            }
            guard let negated = atom.negated else {
                throw CumulusError.predicate("\(atom.negationRefusal) is not supported by CloudKit queries", at: notPosition)
            }
            filters.append(contentsOf: negated)
        }
    }
}
