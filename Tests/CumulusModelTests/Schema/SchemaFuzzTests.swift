import Testing
import CumulusTestSupport
@testable import CumulusModel

@Suite("Schema parser: fuzzing")
struct SchemaFuzzTests {
    static let seed: UInt64 = 0x5C4E_3AF0

    /// Valid schemas the mutations start from; one input in twenty is instead a random
    /// valid schema (``validSchema(rng:)``), which must parse.
    static let corpus: [String] = [
        "DEFINE SCHEMA",
        "define schema record type Note ( title string queryable )",
        """
        DEFINE SCHEMA
            CREATE ROLE DeptManager;
            RECORD TYPE Department (
                "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                "___recordID" REFERENCE QUERYABLE,
                name STRING,
                phone LIST<STRING>,
                employees LIST<REFERENCE>,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world",
                GRANT WRITE, CREATE, READ TO DeptManager
            );
        """,
        """
        DEFINE SCHEMA -- comment
            RECORD TYPE Item (
                n NUMBER PREFERRED AS INT64 QUERYABLE, /* inline */ d NUMBER PREFERRED AS DOUBLE,
                e ENCRYPTED STRING, l LIST<ENCRYPTED TIMESTAMP>, a ASSET, b BYTES, loc LOCATION QUERYABLE,
                "type" STRING SEARCHABLE SORTABLE, // trailing
            );
            CREATE ROLE Ops;
            RECORD TYPE Users ( GRANT READ, WRITE TO Ops )
        """,
        """
        DEFINE SCHEMA
            RECORD TYPE A ( );
            RECORD TYPE B ( "___etag" STRING QUERYABLE, "___parent" REFERENCE, "___share" REFERENCE QUERYABLE );
            RECORD TYPE C ( tags LIST<STRING> QUERYABLE SEARCHABLE, ints LIST<INT64> SORTABLE, GRANT READ TO "_world" );
        """,
    ]

    /// Fragments spliced in: keywords, punctuation and troublemakers.
    static let fragments: [String] = [
        "(", ")", "<", ">", ",", ";", "\"", "\"\"", "/*", "*/", "//", "--", "-", "/", "\n", "\r\n", "\t", " ",
        " DEFINE ", " SCHEMA ", " CREATE ROLE ", " RECORD TYPE ", " GRANT ", " READ ", " CREATE ", " WRITE ", " TO ",
        " LIST<", " LIST<LIST<", " ENCRYPTED ", " NUMBER ", " PREFERRED AS ", " PREFERRED AS INT64 ", " AS ",
        " QUERYABLE", " SORTABLE", " SEARCHABLE", " STRING", " INT64", " DOUBLE", " ASSET", " BYTES", " LOCATION",
        " REFERENCE", " TIMESTAMP", ", x STRING", ", GRANT READ TO Editor", "; CREATE ROLE Editor", "; RECORD TYPE Z ( )",
        "\"___createTime\"", "\"___etag\"", "\"_world\"", "\"_icloud\"", "___modTime", "_x", "x", "Users",
        "é", "😀", "\u{301}", "\u{0}", "\u{FEFF}", "\u{2028}", "\u{85}", "\\", "'", "#",
        String(repeating: "a", count: 300), String(repeating: "LIST<", count: 50),
    ]

    @Test("the corpus parses and round-trips")
    func corpusRoundTrips() throws {
        for text in Self.corpus {
            let schema = try SchemaParser.parse(text)
            let printed = SchemaPrinter.print(schema)
            #expect(try SchemaParser.parse(printed) == schema)
        }
    }

    @Test("100,000 random and mutated schemas parse and round-trip, or fail with a line and column")
    func fuzz() {
        var rng = SeededRandom(seed: Self.seed)
        var parsed = 0
        var refused = 0
        var failures: [String] = []
        for iteration in 0..<100_000 {
            let text = Self.mutant(iteration: iteration, rng: &rng)
            do {
                let schema: Schema
                do {
                    schema = try SchemaParser.parse(text)
                } catch {
                    if Self.isValidCase(iteration) { failures.append("iteration \(iteration): valid \(text.debugDescription) → \(error)") }
                    throw error
                }
                parsed += 1
                if let problem = Self.roundTripProblem(schema) {
                    failures.append("iteration \(iteration): \(text.debugDescription) → \(problem)")
                }
            } catch let error as CumulusError {
                refused += 1
                if error.code != .invalidArguments || !Self.hasValidPosition(error.message, in: text) {
                    failures.append("iteration \(iteration): \(text.debugDescription) → \(error)")
                }
            } catch {
                failures.append("iteration \(iteration): \(text.debugDescription) → non-Cumulus error \(error)")
            }
            if failures.count > 20 { break }
        }
        #expect(failures.isEmpty, "seed \(Self.seed):\n\(failures.joined(separator: "\n"))")
        // Both outcomes must be exercised, or the mutations are too weak or too strong.
        #expect(parsed > 1_000, "seed \(Self.seed): only \(parsed) parsed")
        #expect(refused > 1_000, "seed \(Self.seed): only \(refused) refused")
    }

    /// Why `schema` does not round-trip, or `nil`: its text must parse back to it and
    /// print again to the same bytes.
    static func roundTripProblem(_ schema: Schema) -> String? {
        let printed = SchemaPrinter.print(schema)
        do {
            let reparsed = try SchemaParser.parse(printed)
            if reparsed != schema { return "reparsed differently from \(printed.debugDescription)" }
            let reprinted = SchemaPrinter.print(reparsed)
            if reprinted != printed { return "reprinted as \(reprinted.debugDescription), not \(printed.debugDescription)" }
            return nil
        } catch {
            return "its printed text \(printed.debugDescription) was refused: \(error)"
        }
    }

    /// A refusal starts "line L, column C: " naming a place inside (or just past the
    /// end of) a line of `text`.
    static func hasValidPosition(_ message: String, in text: String) -> Bool {
        let utf8 = message.utf8
        guard utf8.starts(with: "line ".utf8) else { return false }
        let lineDigits = utf8.dropFirst(5).prefix { $0 >= 0x30 && $0 <= 0x39 }
        let rest = utf8.dropFirst(5 + lineDigits.count)
        guard rest.starts(with: ", column ".utf8) else { return false }
        let columnDigits = rest.dropFirst(9).prefix { $0 >= 0x30 && $0 <= 0x39 }
        guard rest.dropFirst(9 + columnDigits.count).starts(with: ": ".utf8),
            let line = Int(String(decoding: lineDigits, as: UTF8.self)),
            let column = Int(String(decoding: columnDigits, as: UTF8.self))
        else { return false }
        // The length of line `line` in scalars: its bytes that do not continue a scalar.
        var text = text
        let length: Int? = text.withUTF8 { bytes in
            var currentLine = 1
            var length = 0
            for byte in bytes {
                if byte == UInt8(ascii: "\n") {
                    if currentLine == line { return length }
                    currentLine += 1
                } else if currentLine == line && byte & 0xC0 != 0x80 {
                    length += 1
                }
            }
            return currentLine == line ? length : nil
        }
        guard let length else { return false }
        return column >= 1 && column <= length + 1
    }

    static let corpusScalars = corpus.map { Array($0.unicodeScalars) }
    static let fragmentScalars = fragments.map { Array($0.unicodeScalars) }

    /// Whether iteration `iteration` gets a random valid schema (``validSchema(rng:)``).
    static func isValidCase(_ iteration: Int) -> Bool { iteration % 20 == 0 }

    static func mutant(iteration: Int, rng: inout SeededRandom) -> String {
        if isValidCase(iteration) { return validSchema(rng: &rng) }
        let base = corpusScalars.randomElement(using: &rng) ?? []
        switch iteration % 10 {
        case 1:
            return "DEFINE SCHEMA " + randomScalars(count: Int.random(in: 0...60, using: &rng), rng: &rng)
        case 2:
            // Deep nesting of one opener, sometimes huge.
            let opener = ["LIST<", "(", "/*", "\"", "RECORD TYPE X (", "ENCRYPTED ", "--"].randomElement(using: &rng) ?? "("
            let count = iteration % 1_000 == 2 ? 10_000 : Int.random(in: 1...200, using: &rng)
            let closer = Bool.random(using: &rng) ? String(repeating: ">", count: count) : ""
            return "DEFINE SCHEMA RECORD TYPE T ( f " + String(repeating: opener, count: count) + "STRING" + closer + " )"
        case 3:
            // Splice two corpus entries at random points.
            let a = base
            let b = corpusScalars.randomElement(using: &rng) ?? base
            let i = Int.random(in: 0...a.count, using: &rng)
            let j = Int.random(in: 0...b.count, using: &rng)
            return string(Array(a[..<i]) + Array(b[j...]))
        default:
            var scalars = base
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                mutate(&scalars, rng: &rng)
            }
            return string(scalars)
        }
    }

    /// The string of `scalars`, encoded by hand: a debug build's generic
    /// `UnicodeScalarView.append(contentsOf:)` would be most of the test's time.
    static func string(_ scalars: [Unicode.Scalar]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(scalars.count * 2)
        for scalar in scalars {
            let v = scalar.value
            if v < 0x80 {
                bytes.append(UInt8(v))
            } else if v < 0x800 {
                bytes.append(UInt8(0xC0 | v >> 6))
                bytes.append(UInt8(0x80 | v & 0x3F))
            } else if v < 0x10000 {
                bytes.append(UInt8(0xE0 | v >> 12))
                bytes.append(UInt8(0x80 | v >> 6 & 0x3F))
                bytes.append(UInt8(0x80 | v & 0x3F))
            } else {
                bytes.append(UInt8(0xF0 | v >> 18))
                bytes.append(UInt8(0x80 | v >> 12 & 0x3F))
                bytes.append(UInt8(0x80 | v >> 6 & 0x3F))
                bytes.append(UInt8(0x80 | v & 0x3F))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A random schema that must parse: every construct valid, but keywords in random
    /// case, names quoted at random, random comments and whitespace between tokens, and
    /// the optional `;` and `,` left out or put in at random.
    static func validSchema(rng: inout SeededRandom) -> String {
        func trivia() -> String {
            [" ", " ", " ", "\n", "\t", "\r\n   ", " /* c\n*/ ", " -- c\n", " // c\n"].randomElement(using: &rng) ?? " "
        }
        func keyword(_ word: String) -> String {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: word.lowercased()
            case 1: word.prefix(1) + word.dropFirst().lowercased()
            default: word
            }
        }
        func name(_ name: String) -> String {
            let mustQuote = name.hasPrefix("_") || name.uppercased() == "GRANT"
            return mustQuote || Int.random(in: 0..<4, using: &rng) == 0 ? "\"\(name)\"" : name
        }
        func type() -> (text: String, searchable: Bool, indexable: Bool) {
            let primitives = SchemaFieldType.Primitive.allCases
            let primitive = primitives.randomElement(using: &rng) ?? .string
            var text = keyword(primitive.rawValue)
            var indexable = primitive != .asset
            if SchemaFieldType.encryptable.contains(primitive), Int.random(in: 0..<5, using: &rng) == 0 {
                text = keyword("ENCRYPTED") + trivia() + text
                indexable = false
            } else if primitive == .number, Bool.random(using: &rng) {
                text += trivia() + keyword("PREFERRED") + trivia() + keyword("AS") + trivia()
                    + keyword(Bool.random(using: &rng) ? "INT64" : "DOUBLE")
            }
            if Bool.random(using: &rng) { text = keyword("LIST") + trivia() + "<" + trivia() + text + trivia() + ">" }
            return (text, primitive == .string && indexable, indexable)
        }
        func options(searchable: Bool, indexable: Bool) -> String {
            guard indexable else { return "" }
            var words = ["QUERYABLE", "SORTABLE"] + (searchable ? ["SEARCHABLE"] : [])
            words = words.filter { _ in Bool.random(using: &rng) }.shuffled(using: &rng)
            return words.map { trivia() + keyword($0) }.joined()
        }
        let roles = ["Editor", "read"].filter { _ in Int.random(in: 0..<3, using: &rng) == 0 }
        let grantees = roles + Array(SecurityRole.builtIn)
        var definitions = roles.map { keyword("CREATE") + trivia() + keyword("ROLE") + trivia() + name($0) }
        let typeNames = ["Note", "type", "Grant"].filter { _ in Bool.random(using: &rng) }
        for typeName in typeNames {
            var entries: [String] = []
            for system in SystemField.allCases where Int.random(in: 0..<6, using: &rng) == 0 {
                let typeText = keyword(system.type.schemaText)
                entries.append(name(system.rawValue) + trivia() + typeText + options(searchable: system == .etag, indexable: true))
            }
            for fieldName in ["title", "list", "grant", "x"] where Bool.random(using: &rng) {
                let (typeText, searchable, indexable) = type()
                entries.append(name(fieldName) + trivia() + typeText + options(searchable: searchable, indexable: indexable))
            }
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                let permissions = ["READ", "CREATE", "WRITE"].filter { _ in Bool.random(using: &rng) }
                guard !permissions.isEmpty, let role = grantees.randomElement(using: &rng) else { continue }
                let list = permissions.map(keyword).joined(separator: trivia() + "," + trivia())
                entries.append(keyword("GRANT") + trivia() + list + trivia() + keyword("TO") + trivia() + name(role))
            }
            entries.shuffle(using: &rng)
            var body = entries.joined(separator: trivia() + "," + trivia())
            if !entries.isEmpty, Int.random(in: 0..<4, using: &rng) == 0 { body += "," }
            definitions.append(
                keyword("RECORD") + trivia() + keyword("TYPE") + trivia() + name(typeName) + trivia() + "(" + trivia() + body
                    + trivia() + ")")
        }
        definitions.shuffle(using: &rng)
        var out = keyword("DEFINE") + trivia() + keyword("SCHEMA") + trivia()
        out += definitions.joined(separator: trivia() + ";" + trivia())
        if !definitions.isEmpty, Bool.random(using: &rng) { out += ";" }
        return out + trivia()
    }

    static func mutate(_ scalars: inout [Unicode.Scalar], rng: inout SeededRandom) {
        let position = Int.random(in: 0...scalars.count, using: &rng)
        switch Int.random(in: 0..<6, using: &rng) {
        case 0:
            scalars.insert(randomScalar(rng: &rng), at: position)
        case 1:
            if position < scalars.count { scalars.remove(at: position) }
        case 2:
            if position < scalars.count { scalars[position] = randomScalar(rng: &rng) }
        case 3, 4:
            let fragment = fragmentScalars.randomElement(using: &rng) ?? []
            scalars.insert(contentsOf: fragment, at: position)
        default:
            // Duplicate or drop a run, which unbalances quotes, brackets and comments.
            let end = min(scalars.count, position + Int.random(in: 1...12, using: &rng))
            if Bool.random(using: &rng) {
                scalars.insert(contentsOf: Array(scalars[position..<end]), at: end)
            } else {
                scalars.removeSubrange(position..<end)
            }
        }
    }

    static func randomScalars(count: Int, rng: inout SeededRandom) -> String {
        string((0..<count).map { _ in randomScalar(rng: &rng) })
    }

    static func randomScalar(rng: inout SeededRandom) -> Unicode.Scalar {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<6:
            return Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng))
        case 6:
            return Unicode.Scalar(UInt8.random(in: 0...0xFF, using: &rng))
        default:
            // Any scalar; the failable initializer refuses surrogates, so retry.
            while true {
                if let scalar = Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &rng)) { return scalar }
            }
        }
    }
}
