/// Splits a predicate format string into tokens, in one linear pass.
///
/// Works on Unicode scalars rather than `Character`s: a combining mark after a
/// quote would otherwise fuse with it into one grapheme and hide the quote.
/// Positions in tokens and errors are therefore scalar offsets.
///
/// String literals are single- or double-quoted; escapes are `\'`, `\"`, `\\`,
/// `\n`, `\t`, `\r`, `\0`, `\uXXXX` (exactly four hex digits, UTF-16: a
/// surrogate pair must be written as two escapes) and `\u{X…}` (one to eight hex
/// digits naming a scalar). Numbers are decimal: `-?digits(.digits)?([eE][+-]?digits)?`;
/// without a fraction or exponent they are `Int64`, otherwise `Double`.
struct PredicateLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    private init(_ format: String) {
        scalars = Array(format.unicodeScalars)
    }

    /// The tokens of `format`, ending with `.end`. A lexical error ends the tokens
    /// early and is returned rather than thrown, so the parser can report an error
    /// further left first: a client should hear about the leftmost problem.
    static func tokenize(_ format: String) -> (tokens: [PredicateToken], failure: CumulusError?) {
        var lexer = PredicateLexer(format)
        var tokens: [PredicateToken] = []
        while true {
            do {
                let token = try lexer.next()
                tokens.append(token)
                if token.kind == .end { return (tokens, nil) }
            } catch {
                tokens.append(PredicateToken(kind: .end, position: lexer.index))
                let failure = error as? CumulusError ?? CumulusError(.invalidArguments, "\(error)")
                return (tokens, failure)
            }
        }
    }

    private func scalar(at offset: Int) -> Unicode.Scalar? {
        offset < scalars.count ? scalars[offset] : nil
    }

    private mutating func next() throws -> PredicateToken {
        while let c = scalar(at: index), c.properties.isWhitespace { index += 1 }
        let start = index
        guard let c = scalar(at: index) else { return PredicateToken(kind: .end, position: start) }
        let following = scalar(at: index + 1)

        func single(_ kind: PredicateToken.Kind) -> PredicateToken {
            index += 1
            return PredicateToken(kind: kind, position: start)
        }
        func double(_ kind: PredicateToken.Kind) -> PredicateToken {
            index += 2
            return PredicateToken(kind: kind, position: start)
        }

        switch c {
        case "(": return single(.leftParen)
        case ")": return single(.rightParen)
        case "{": return single(.leftBrace)
        case "}": return single(.rightBrace)
        case "[": return single(.leftBracket)
        case "]": return single(.rightBracket)
        case ",": return single(.comma)
        case ":": return single(.colon)
        case ".": return single(.dot)
        case "=":
            switch following {
            case "=": return double(.equal)
            case "<": return double(.lessOrEqual)
            case ">": return double(.greaterOrEqual)
            default: return single(.equal)
            }
        case "!":
            return following == "=" ? double(.notEqual) : single(.bang)
        case "<":
            switch following {
            case "=": return double(.lessOrEqual)
            case ">": return double(.notEqual)
            default: return single(.less)
            }
        case ">":
            return following == "=" ? double(.greaterOrEqual) : single(.greater)
        case "&":
            guard following == "&" else { throw CumulusError.predicate("a single '&'", at: start, hint: "write && or AND") }
            return double(.ampAmp)
        case "|":
            guard following == "|" else { throw CumulusError.predicate("a single '|'", at: start) }
            return double(.pipePipe)
        case "%":
            switch following {
            case "@": return double(.valueArgument)
            case "K": return double(.keyArgument)
            default:
                throw CumulusError.predicate(
                    "the format specifier '%\(following.map { $0.escaped(asASCII: true) } ?? "")'", at: start,
                    hint: "only %@ (a value) and %K (a key) are supported")
            }
        case "'", "\"":
            return PredicateToken(kind: .string(try string(quote: c)), position: start)
        case "$":
            throw CumulusError.predicate("a variable ($name)", at: start, hint: "variables are not supported; use %@")
        case "@":
            throw CumulusError.predicate("a collection operator (@…)", at: start, hint: "not supported by CloudKit queries")
        default:
            break
        }
        if Self.isDigit(c) || (c == "-" && following.map(Self.isDigit) == true) {
            return PredicateToken(kind: try number(), position: start)
        }
        if Self.isIdentifierHead(c) {
            while let d = scalar(at: index), Self.isIdentifierTail(d) { index += 1 }
            var name = String.UnicodeScalarView()
            name.append(contentsOf: scalars[start..<index])
            return PredicateToken(kind: .identifier(String(name)), position: start)
        }
        throw CumulusError.predicate("unexpected character '\(c.escaped(asASCII: true))'", at: start)
    }

    private mutating func string(quote: Unicode.Scalar) throws -> String {
        let start = index
        index += 1
        var text = String.UnicodeScalarView()
        while true {
            guard let c = scalar(at: index) else {
                throw CumulusError.predicate("an unterminated string", at: start, hint: "close it with \(quote)")
            }
            if c == quote {
                index += 1
                return String(text)
            }
            guard c == "\\" else {
                text.append(c)
                index += 1
                continue
            }
            let escapeStart = index
            guard let e = scalar(at: index + 1) else {
                throw CumulusError.predicate("an unterminated string", at: start, hint: "close it with \(quote)")
            }
            index += 2
            switch e {
            case "'", "\"", "\\": text.append(e)
            case "n": text.append("\n")
            case "t": text.append("\t")
            case "r": text.append("\r")
            case "0": text.append("\0")
            case "u": text.append(try unicodeEscape(start: escapeStart))
            default:
                throw CumulusError.predicate(
                    "the unknown escape '\\\(e.escaped(asASCII: true))'", at: escapeStart,
                    hint: "use \\', \\\", \\\\, \\n, \\t, \\r, \\0, \\uXXXX or \\u{X…}")
            }
        }
    }

    /// Reads what follows `\u`; `index` is just past the `u`.
    private mutating func unicodeEscape(start: Int) throws -> Unicode.Scalar {
        let bad = CumulusError.predicate("an invalid \\u escape", at: start, hint: "use \\uXXXX or \\u{X…} naming a Unicode scalar")
        if scalar(at: index) == "{" {
            index += 1
            var value: UInt32 = 0
            var digits = 0
            while let c = scalar(at: index), c != "}" {
                guard let digit = Self.hexValue(c), digits < 8 else { throw bad }
                value = value << 4 | digit
                digits += 1
                index += 1
            }
            guard scalar(at: index) == "}", digits > 0, let result = Unicode.Scalar(value) else { throw bad }
            index += 1
            return result
        }
        let unit = try fourHexDigits(bad)
        switch unit {
        case 0xD800...0xDBFF:
            guard scalar(at: index) == "\\", scalar(at: index + 1) == "u" else { throw bad }
            index += 2
            let low = try fourHexDigits(bad)
            guard (0xDC00...0xDFFF).contains(low),
                let result = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            else { throw bad }
            return result
        default:
            guard let result = Unicode.Scalar(unit) else { throw bad }  // a lone low surrogate
            return result
        }
    }

    private mutating func fourHexDigits(_ error: CumulusError) throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let c = scalar(at: index), let digit = Self.hexValue(c) else { throw error }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func number() throws -> PredicateToken.Kind {
        let start = index
        if scalar(at: index) == "-" { index += 1 }
        skipDigits()
        var isInteger = true
        if scalar(at: index) == ".", let d = scalar(at: index + 1), Self.isDigit(d) {
            isInteger = false
            index += 1
            skipDigits()
        }
        if let e = scalar(at: index), e == "e" || e == "E" {
            var k = index + 1
            if let sign = scalar(at: k), sign == "+" || sign == "-" { k += 1 }
            guard let d = scalar(at: k), Self.isDigit(d) else {
                throw CumulusError.predicate("a malformed number", at: start, hint: "an exponent needs digits")
            }
            isInteger = false
            index = k
            skipDigits()
        }
        if let c = scalar(at: index), Self.isIdentifierTail(c) {
            throw CumulusError.predicate("a malformed number", at: start)
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[start..<index])
        let literal = String(text)
        if isInteger {
            guard let value = Int64(literal) else {
                throw CumulusError.predicate("the integer \(literal) (out of the Int64 range)", at: start)
            }
            return .integer(value)
        }
        guard let value = Double(literal), value.isFinite else {
            throw CumulusError.predicate("the number \(literal) (not a finite double)", at: start)
        }
        return .double(value)
    }

    private mutating func skipDigits() {
        while let c = scalar(at: index), Self.isDigit(c) { index += 1 }
    }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c.value >= 0x30 && c.value <= 0x39 }

    private static func isIdentifierHead(_ c: Unicode.Scalar) -> Bool {
        (c.value >= 0x41 && c.value <= 0x5A) || (c.value >= 0x61 && c.value <= 0x7A) || c == "_"
    }

    private static func isIdentifierTail(_ c: Unicode.Scalar) -> Bool { isIdentifierHead(c) || isDigit(c) }

    private static func hexValue(_ c: Unicode.Scalar) -> UInt32? {
        switch c.value {
        case 0x30...0x39: c.value - 0x30
        case 0x41...0x46: c.value - 0x41 + 10
        case 0x61...0x66: c.value - 0x61 + 10
        default: nil
        }
    }
}
