/// The recursive-descent half of ``PredicateParser``: tokens to a ``PredicateNode``.
///
/// Grammar (keywords case-insensitive):
///
///     predicate   := unary (('AND' | '&&') unary)*
///     unary       := ('NOT' | '!') unary | '(' predicate ')' | 'TRUEPREDICATE' | 'FALSEPREDICATE' | comparison
///     comparison  := ('ANY' | 'SOME')? operand operator options? operand
///     operand     := key | '%K' | literal | '%@' | '{' (element (',' element)*)? '}' | distance
///     distance    := 'distanceToLocation' ':' 'fromLocation' ':' '(' (key | '%K') ',' '%@' ')'
///
/// Recursion happens only through `(` and `NOT`, and both count against
/// ``maximumDepth``, so hostile input cannot exhaust the stack.
struct PredicateSyntaxParser {
    /// How deep parentheses and `NOT`s may nest.
    static let maximumDepth = 64

    private let tokens: [PredicateToken]
    private let lexicalFailure: CumulusError?
    private let arguments: [PredicateArgument]
    private var index = 0
    private var depth = 0
    private var argumentsUsed = 0

    /// A parser over `tokens` (ending with `.end`) substituting `arguments`;
    /// `lexicalFailure` is thrown when the parser reaches the last token.
    init(tokens: [PredicateToken], lexicalFailure: CumulusError?, arguments: [PredicateArgument]) {
        self.tokens = tokens.isEmpty ? [PredicateToken(kind: .end, position: 0)] : tokens
        self.lexicalFailure = lexicalFailure
        self.arguments = arguments
    }

    /// Parses the whole input, refusing anything left over and unused arguments.
    mutating func parse() throws -> PredicateNode {
        if try peek.kind == .end { throw CumulusError.predicate("an empty predicate", at: 0, hint: "use TRUEPREDICATE to match everything") }
        let node = try parseConjunction()
        guard try peek.kind == .end else {
            if try peek.kind == .rightParen {
                throw CumulusError.predicate("an unbalanced ')'", at: try peek.position)
            }
            throw CumulusError.predicate("unexpected \(try peek.display) after a complete predicate", at: try peek.position)
        }
        if argumentsUsed < arguments.count {
            throw CumulusError.predicate(
                "too many arguments (\(arguments.count) given, the format uses \(argumentsUsed))", at: try peek.position)
        }
        return node
    }

    // MARK: Tokens

    private var peek: PredicateToken {
        get throws { try token(at: index) }
    }

    private func peek(ahead offset: Int) throws -> PredicateToken {
        try token(at: index + offset)
    }

    /// `tokens` always ends with `.end`; looking at it when lexing failed there is the lexical error.
    private func token(at offset: Int) throws -> PredicateToken {
        if offset >= tokens.count - 1 {
            if let lexicalFailure { throw lexicalFailure }
            return tokens[tokens.count - 1]
        }
        return tokens[offset]
    }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    /// The keyword `peek` spells, upper-cased, if it is an identifier.
    private var keyword: String? {
        get throws {
            if case .identifier(let name) = try peek.kind { return name.uppercased() }
            return nil
        }
    }

    private mutating func enter(at position: Int) throws {
        depth += 1
        if depth > Self.maximumDepth {
            throw CumulusError.predicate(
                "nesting deeper than \(Self.maximumDepth) parentheses or NOTs", at: position)
        }
    }

    // MARK: Predicates

    private mutating func parseConjunction() throws -> PredicateNode {
        let start = try peek.position
        var terms = [try parseUnary()]
        while true {
            if try peek.kind == .ampAmp || keyword == "AND" {
                advance()
                terms.append(try parseUnary())
            } else if try peek.kind == .pipePipe || keyword == "OR" {
                throw CumulusError.predicate(
                    "OR is not supported by CloudKit queries", at: try peek.position,
                    hint: "run two queries and merge the results")
            } else {
                break
            }
        }
        return terms.count == 1 ? terms[0] : .and(terms, position: start)
    }

    private mutating func parseUnary() throws -> PredicateNode {
        let token = try peek
        if try token.kind == .bang || keyword == "NOT" {
            advance()
            try enter(at: token.position)
            let operand = try parseUnary()
            depth -= 1
            return .not(operand, position: token.position)
        }
        if token.kind == .leftParen {
            advance()
            try enter(at: token.position)
            let inner = try parseConjunction()
            guard try peek.kind == .rightParen else {
                throw CumulusError.predicate(
                    "unexpected \(try peek.display) where ')' was expected", at: try peek.position,
                    hint: "the '(' at position \(token.position) is not closed")
            }
            advance()
            depth -= 1
            return inner
        }
        switch try keyword {
        case "TRUEPREDICATE":
            advance()
            return .constant(true, position: token.position)
        case "FALSEPREDICATE":
            advance()
            return .constant(false, position: token.position)
        default:
            return .atom(try parseComparison())
        }
    }

    private mutating func parseComparison() throws -> PredicateAtom {
        let start = try peek.position
        var quantified = false
        switch try keyword {
        case "ANY", "SOME":
            quantified = true
            advance()
        case "ALL":
            throw CumulusError.predicate("ALL is not supported by CloudKit queries", at: start)
        case "NONE":
            throw CumulusError.predicate(
                "NONE is not supported by CloudKit queries", at: start, hint: "use NOT (list CONTAINS value)")
        default:
            break
        }
        let lhs = try parseOperand()
        let op = try parseOperator()
        let rhs = try parseOperand()
        return try PredicateComparison.resolve(
            lhs: lhs, operator: op, rhs: rhs, quantified: quantified, position: start)
    }

    // MARK: Operators

    private mutating func parseOperator() throws -> PredicateOperator {
        let token = try peek
        let kind: PredicateOperator.Kind
        switch token.kind {
        case .equal: kind = .equal
        case .notEqual: kind = .notEqual
        case .less: kind = .less
        case .lessOrEqual: kind = .lessOrEqual
        case .greater: kind = .greater
        case .greaterOrEqual: kind = .greaterOrEqual
        case .identifier:
            switch try keyword {
            case "BETWEEN": kind = .between
            case "IN": kind = .in
            case "BEGINSWITH": kind = .beginsWith
            case "CONTAINS": kind = .contains
            case "TOKENMATCHES": kind = .tokenMatches
            case let word? where ["ENDSWITH", "LIKE", "MATCHES"].contains(word):
                throw CumulusError.predicate("\(word) is not supported by CloudKit queries", at: token.position)
            case "OR":
                throw CumulusError.predicate(
                    "OR is not supported by CloudKit queries", at: token.position,
                    hint: "run two queries and merge the results")
            default:
                throw CumulusError.predicate(
                    "unexpected \(token.display) where a comparison operator was expected", at: token.position)
            }
        default:
            throw CumulusError.predicate(
                "unexpected \(token.display) where a comparison operator was expected", at: token.position)
        }
        advance()
        var op = PredicateOperator(kind: kind, position: token.position, options: nil, optionsPosition: token.position)
        if try peek.kind == .leftBracket {
            op.optionsPosition = try peek.position
            advance()
            guard case .identifier(let letters) = try peek.kind else {
                throw CumulusError.predicate("malformed comparison options after \(op.name)", at: op.optionsPosition)
            }
            advance()
            guard try peek.kind == .rightBracket else {
                throw CumulusError.predicate("malformed comparison options after \(op.name)", at: op.optionsPosition)
            }
            advance()
            op.options = letters.lowercased()
        }
        return op
    }

    // MARK: Operands

    private mutating func parseOperand() throws -> PredicateOperand {
        let token = try peek
        switch token.kind {
        case .identifier(let name):
            return try parseIdentifierOperand(name, at: token.position)
        case .string(let text):
            advance()
            return .value(.string(text), position: token.position)
        case .integer(let value):
            advance()
            return .value(.int64(value), position: token.position)
        case .double(let value):
            advance()
            return .value(.double(value), position: token.position)
        case .valueArgument:
            advance()
            let value = try valueArgument(at: token.position)
            if case .list(let items) = value {
                return .value(.list(try PredicateComparison.homogeneousList(items, at: token.position)), position: token.position)
            }
            return .value(value, position: token.position)
        case .keyArgument:
            advance()
            let name = try keyArgument(at: token.position)
            return .key(QueryKey(name: name), name: name, position: token.position)
        case .leftBrace:
            return try parseAggregate()
        case .end:
            throw CumulusError.predicate("unexpected end of the predicate where a key or a value was expected", at: token.position)
        default:
            throw CumulusError.predicate("unexpected \(token.display) where a key or a value was expected", at: token.position)
        }
    }

    private mutating func parseIdentifierOperand(_ name: String, at position: Int) throws -> PredicateOperand {
        let upper = name.uppercased()
        switch upper {
        case "TRUE", "YES":
            advance()
            return .value(.int64(1), position: position)
        case "FALSE", "NO":
            advance()
            return .value(.int64(0), position: position)
        case "NULL", "NIL":
            throw CumulusError.predicate("\(upper) is not supported by CloudKit queries", at: position)
        case "SUBQUERY", "FUNCTION", "CAST":
            throw CumulusError.predicate("\(upper) is not supported by CloudKit queries", at: position)
        case "SELF":
            advance()
            return .key(.allTokens, name: name, position: position)
        case "AND", "OR", "NOT", "IN", "BETWEEN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES",
            "TOKENMATCHES", "ANY", "SOME", "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE":
            throw CumulusError.predicate(
                "unexpected keyword '\(name)' where a key or a value was expected", at: position,
                hint: "pass a field with this name as %K")
        default:
            break
        }
        switch try peek(ahead: 1).kind {
        case .colon where name == "distanceToLocation":
            return try parseDistance(at: position)
        case .colon, .leftParen:
            throw CumulusError.predicate("the function '\(name)' is not supported by CloudKit queries", at: position)
        case .dot:
            var path = name + "."
            if case .identifier(let member) = try? peek(ahead: 2).kind { path += member } else { path += "…" }
            throw CumulusError.predicate(
                "the key path '\(path)' is not supported by CloudKit queries", at: position,
                hint: "keys must be fields of the record itself")
        default:
            advance()
            return .key(QueryKey(name: name), name: name, position: position)
        }
    }

    /// `distanceToLocation:fromLocation:(key, %@)`; `peek` is `distanceToLocation`.
    private mutating func parseDistance(at position: Int) throws -> PredicateOperand {
        advance()
        let malformed = { (at: Int) in
            CumulusError.predicate(
                "a malformed distanceToLocation:fromLocation: call", at: at,
                hint: "write distanceToLocation:fromLocation:(field, %@) with a location argument")
        }
        for expected in [PredicateToken.Kind.colon, .identifier("fromLocation"), .colon, .leftParen] {
            guard try peek.kind == expected else { throw malformed(try peek.position) }
            advance()
        }
        let keyToken = try peek
        let key: QueryKey
        switch keyToken.kind {
        case .identifier(let name):
            guard try peek(ahead: 1).kind != .dot else {
                throw CumulusError.predicate("the key path '\(name).…' is not supported by CloudKit queries", at: keyToken.position)
            }
            advance()
            key = QueryKey(name: name)
        case .keyArgument:
            advance()
            key = QueryKey(name: try keyArgument(at: keyToken.position))
        default:
            throw malformed(keyToken.position)
        }
        if key == .allTokens { throw malformed(keyToken.position) }
        guard try peek.kind == .comma else { throw malformed(try peek.position) }
        advance()
        let centerToken = try peek
        guard centerToken.kind == .valueArgument else { throw malformed(centerToken.position) }
        advance()
        guard case .location(let center) = try valueArgument(at: centerToken.position) else {
            throw CumulusError.predicate(
                "%@ in distanceToLocation:fromLocation: without a location argument", at: centerToken.position)
        }
        guard try peek.kind == .rightParen else { throw malformed(try peek.position) }
        advance()
        return .distance(key: key, center: center, position: position)
    }

    /// `{a, b, …}` of literals and `%@` scalars.
    private mutating func parseAggregate() throws -> PredicateOperand {
        let start = try peek.position
        advance()
        var items: [FieldValue] = []
        if try peek.kind == .rightBrace {
            advance()
            return .value(.list([]), position: start)
        }
        while true {
            let token = try peek
            switch token.kind {
            case .string(let text): items.append(.string(text))
            case .integer(let value): items.append(.int64(value))
            case .double(let value): items.append(.double(value))
            case .identifier(let name):
                switch name.uppercased() {
                case "TRUE", "YES": items.append(.int64(1))
                case "FALSE", "NO": items.append(.int64(0))
                default:
                    throw CumulusError.predicate("the key '\(name)' inside an aggregate", at: token.position, hint: "an aggregate holds values only")
                }
            case .valueArgument:
                let value = try valueArgument(at: token.position)
                if case .list = value {
                    throw CumulusError.predicate("a list argument inside an aggregate", at: token.position, hint: "lists cannot nest")
                }
                items.append(value)
            case .leftBrace:
                throw CumulusError.predicate("a nested aggregate", at: token.position, hint: "lists cannot nest")
            default:
                throw CumulusError.predicate("unexpected \(token.display) inside an aggregate", at: token.position)
            }
            advance()
            if try peek.kind == .comma {
                advance()
            } else if try peek.kind == .rightBrace {
                advance()
                break
            } else {
                throw CumulusError.predicate(
                    "unexpected \(try peek.display) inside an aggregate", at: try peek.position,
                    hint: "the '{' at position \(start) is not closed")
            }
        }
        return .value(.list(try PredicateComparison.homogeneousList(items, at: start)), position: start)
    }

    // MARK: Arguments

    private mutating func nextArgument(_ placeholder: String, at position: Int) throws -> PredicateArgument {
        guard argumentsUsed < arguments.count else {
            throw CumulusError.predicate(
                "\(placeholder) without an argument (\(arguments.count) given)", at: position)
        }
        defer { argumentsUsed += 1 }
        return arguments[argumentsUsed]
    }

    private mutating func valueArgument(at position: Int) throws -> FieldValue {
        switch try nextArgument("%@", at: position) {
        case .value(let value): return value
        case .key(let name):
            throw CumulusError.predicate("%@ with the key argument '\(name)'", at: position, hint: "use %K for keys")
        }
    }

    private mutating func keyArgument(at position: Int) throws -> String {
        switch try nextArgument("%K", at: position) {
        case .key(let name):
            try Self.checkKeyName(name, at: position)
            return name
        case .value:
            throw CumulusError.predicate("%K with a value argument", at: position, hint: "%K takes a key; use %@ for values")
        }
    }

    /// A `%K` name must be what an identifier could spell: ASCII `[A-Za-z_][A-Za-z0-9_]*`.
    private static func checkKeyName(_ name: String, at position: Int) throws {
        if name.contains(".") {
            throw CumulusError.predicate("the key path '\(name)' is not supported by CloudKit queries", at: position)
        }
        var first = true
        for byte in name.utf8 {
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
            let digit = byte >= 0x30 && byte <= 0x39
            guard letter || (digit && !first) else {
                throw CumulusError.predicate("%K with the invalid key '\(name)'", at: position)
            }
            first = false
        }
        if first { throw CumulusError.predicate("%K with an empty key", at: position) }
    }
}
