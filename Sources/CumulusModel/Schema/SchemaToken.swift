/// One lexical token of the schema language, with where it starts.
struct SchemaToken: Sendable, Hashable {
    /// The words the grammar gives a meaning, type names included. A word spells one
    /// in any case; ``SchemaPrinter`` quotes every name that does.
    enum Keyword: String, Sendable, Hashable, CaseIterable {
        case define = "DEFINE", schema = "SCHEMA", create = "CREATE", role = "ROLE", record = "RECORD", type = "TYPE"
        case grant = "GRANT", read = "READ", write = "WRITE", to = "TO"
        case list = "LIST", encrypted = "ENCRYPTED", number = "NUMBER", preferred = "PREFERRED", `as` = "AS"
        case queryable = "QUERYABLE", sortable = "SORTABLE", searchable = "SEARCHABLE"
        case asset = "ASSET", bytes = "BYTES", double = "DOUBLE", int64 = "INT64", location = "LOCATION"
        case reference = "REFERENCE", string = "STRING", timestamp = "TIMESTAMP"

        /// The keyword `word` spells in any case, if any.
        init?(spelling word: String) {
            // No keyword is longer than 10 bytes: most names are refused without upper-casing.
            guard word.utf8.count <= 10, let keyword = Self.byName[word.uppercased()] else { return nil }
            self = keyword
        }

        private static let byName = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

        /// The primitive type this keyword names, if it names one.
        var primitive: SchemaFieldType.Primitive? { SchemaFieldType.Primitive(rawValue: rawValue) }
    }

    /// What the token is.
    enum Kind: Sendable, Hashable {
        /// A run of ASCII letters, digits and `_`: a name, or a keyword wherever the
        /// grammar expects one.
        case word(String, Keyword?)
        /// A double-quoted name, without its quotes. Never a keyword.
        case quoted(String)
        /// `(`
        case leftParen
        /// `)`
        case rightParen
        /// `<`
        case less
        /// `>`
        case greater
        /// `,`
        case comma
        /// `;`
        case semicolon
        /// A character the language has no use for.
        case invalid(Unicode.Scalar)
        /// A `"` with no closing `"` on the same line.
        case unterminatedQuote
        /// A `/*` with no `*/` after it; the lexer stops there.
        case unterminatedComment
        /// The end of the text.
        case end
    }

    /// The token.
    var kind: Kind
    /// The 1-based line of its first character (lines end at `\n`).
    var line: Int
    /// The 1-based column of its first character, in Unicode scalars.
    var column: Int

    /// The keyword this token spells, if it is a word that spells one.
    var keyword: Keyword? {
        if case .word(_, let keyword) = kind { return keyword }
        return nil
    }

    /// The token as an error message quotes it after "found".
    var display: String {
        switch kind {
        case .word(let word, _): "'\(Self.excerpt(word))'"
        case .quoted(let name): "'\"\(Self.excerpt(name))\"'"
        case .leftParen: "'('"
        case .rightParen: "')'"
        case .less: "'<'"
        case .greater: "'>'"
        case .comma: "','"
        case .semicolon: "';'"
        case .invalid(let scalar): "'\(scalar.escaped(asASCII: true))'"
        case .unterminatedQuote: "an unterminated quoted name (no closing '\"' on its line)"
        case .unterminatedComment: "an unterminated comment ('/*' without '*/')"
        case .end: "the end of the schema"
        }
    }

    /// `text` made safe and short for a message: every scalar outside printable ASCII
    /// escaped, and anything past 40 scalars cut to "…".
    static func excerpt(_ text: String) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == 40 {
                out += "…"
                break
            }
            out += scalar.escaped(asASCII: true)
            count += 1
        }
        return out
    }
}
