/// One lexical token of a predicate format string.
struct PredicateToken: Sendable, Hashable {
    /// What the token is; literals carry their decoded value.
    enum Kind: Sendable, Hashable {
        /// An ASCII identifier; keywords are identifiers matched case-insensitively by the parser.
        case identifier(String)
        /// A quoted string with its escapes resolved.
        case string(String)
        /// An integer literal (sign included).
        case integer(Int64)
        /// A literal with a fraction or an exponent.
        case double(Double)
        /// `==` or `=`
        case equal
        /// `!=` or `<>`
        case notEqual
        /// `<`
        case less
        /// `<=` or `=<`
        case lessOrEqual
        /// `>`
        case greater
        /// `>=` or `=>`
        case greaterOrEqual
        /// `&&`
        case ampAmp
        /// `||`
        case pipePipe
        /// `!`
        case bang
        /// `(`
        case leftParen
        /// `)`
        case rightParen
        /// `{`
        case leftBrace
        /// `}`
        case rightBrace
        /// `[`
        case leftBracket
        /// `]`
        case rightBracket
        /// `,`
        case comma
        /// `:`
        case colon
        /// `.`
        case dot
        /// `%@`
        case valueArgument
        /// `%K`
        case keyArgument
        /// The end of the input.
        case end
    }

    /// The token.
    var kind: Kind
    /// Offset of its first Unicode scalar in the format string.
    var position: Int

    /// The token as it would be quoted in an error message.
    var display: String {
        switch kind {
        case .identifier(let name): "'\(name)'"
        case .string: "a string"
        case .integer, .double: "a number"
        case .equal: "'=='"
        case .notEqual: "'!='"
        case .less: "'<'"
        case .lessOrEqual: "'<='"
        case .greater: "'>'"
        case .greaterOrEqual: "'>='"
        case .ampAmp: "'&&'"
        case .pipePipe: "'||'"
        case .bang: "'!'"
        case .leftParen: "'('"
        case .rightParen: "')'"
        case .leftBrace: "'{'"
        case .rightBrace: "'}'"
        case .leftBracket: "'['"
        case .rightBracket: "']'"
        case .comma: "','"
        case .colon: "':'"
        case .dot: "'.'"
        case .valueArgument: "'%@'"
        case .keyArgument: "'%K'"
        case .end: "the end of the predicate"
        }
    }
}
