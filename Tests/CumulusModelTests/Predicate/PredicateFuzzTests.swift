import Foundation
import Testing
import CumulusTestSupport
@testable import CumulusModel

@Suite("Predicate parser: fuzzing")
struct PredicateFuzzTests {
    /// Valid predicates the mutations start from; each parses with `arguments`.
    static let corpus: [String] = [
        "x == 5", "x = 'a' AND y != 2.5", "5 < x && y >= -3", "x BETWEEN {1, 10}", "name IN {'a', \"b\", 'c'}",
        "NOT (name IN %@)", "NOT name IN {1, 2}", "name BEGINSWITH 'Jo'", "NOT (name BEGINSWITH %@)",
        "tags CONTAINS 'a'", "ANY tags == 'a'", "SOME tags = %@", "NOT (tags CONTAINS 'x')", "ANY tags BEGINSWITH 'x'",
        "self CONTAINS 'hello world'", "allTokens TOKENMATCHES[cdw] 'a b'",
        "distanceToLocation:fromLocation:(location, %@) < 1000", "(a == 1 AND (b == 2 && c <= 3))",
        "TRUEPREDICATE", "FALSEPREDICATE", "x == 1 AND FALSEPREDICATE", "%K == %@", "creationDate > %@",
        "recordID == %@", "NOT (a == TRUE)", "x IN {1, 2.5}", #"s == 'it\'s \u00e9 \u{1F600} \n'"#, "'a' IN tags",
        "modificationDate <= 1700000000000 AND parent == %@", "x =< 3 and y => 4 AnD z <> 5",
    ]

    /// Fragments spliced in: tokens, keywords and troublemakers.
    static let fragments: [String] = [
        "(", ")", "{", "}", "[c]", "[cdw]", ",", ":", ".", "'", "\"", "\\", "\\u", "\\u{", "%@", "%K", "%d", "==", "=",
        "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "&&", "||", "!", "&", "|", " AND ", " OR ", " NOT ", " IN ",
        " BETWEEN ", " CONTAINS ", " BEGINSWITH ", " ENDSWITH ", " LIKE ", " TOKENMATCHES ", " ANY ", " ALL ",
        " SOME ", " NONE ", "self", "SUBQUERY(", "FUNCTION(", "distanceToLocation:fromLocation:(", "TRUEPREDICATE",
        "FALSEPREDICATE", "nil", "TRUE", "NO", "9223372036854775808", "-9223372036854775808", "1e999", "1e", "0.5",
        "-", "$x", "@count", "#", "é", "😀", "\u{301}", "\u{0}", "\u{FEFF}", "\u{2028}", "a.b", "x", "recordID",
        "'unterminated", "\\uD800", "\\u{110000}",
    ]

    static let argumentPool: [PredicateArgument] = [
        .value(.string("a")), .value(.int64(3)), .value(.double(2.5)), .value(.list([.string("a"), .string("b")])),
        .value(.list([])), .value(.list([.int64(1), .string("x")])), .value(.location(Location(latitude: 1, longitude: 2))),
        .value(.timestamp(Timestamp(millisecondsSince1970: 5))), .value(.reference(Reference(recordID: RecordID(recordName: "r")))),
        .key("name"), .key("___createTime"), .key("a.b"), .key(""), .key("é"),
    ]

    /// Arguments the corpus entry needs, so every corpus entry parses unmutated.
    static func arguments(for format: String) -> [PredicateArgument] {
        switch format {
        case "NOT (name IN %@)": [.value(.list([.int64(1)]))]
        case "NOT (name BEGINSWITH %@)", "SOME tags = %@": [.value(.string("a"))]
        case "distanceToLocation:fromLocation:(location, %@) < 1000": [.value(.location(Location(latitude: 1, longitude: 2)))]
        case "%K == %@": [.key("name"), .value(.int64(1))]
        case "creationDate > %@": [.value(.timestamp(Timestamp(millisecondsSince1970: 1)))]
        case "recordID == %@", "modificationDate <= 1700000000000 AND parent == %@":
            [.value(.reference(Reference(recordID: RecordID(recordName: "r"))))]
        default: []
        }
    }

    @Test("the corpus parses")
    func corpusParses() throws {
        for format in Self.corpus {
            _ = try PredicateParser.parse(format, arguments: Self.arguments(for: format))
        }
    }

    @Test("100,000 random and mutated predicates parse or fail with invalidArguments")
    func fuzz() {
        var rng = SeededRandom(seed: 0xC0FFEE_5EED)
        var parsed = 0
        var refused = 0
        var failures: [String] = []
        for iteration in 0..<100_000 {
            let format = Self.mutant(iteration: iteration, rng: &rng)
            var arguments = Self.arguments(for: format)
            if Int.random(in: 0..<4, using: &rng) == 0 {
                arguments = (0..<Int.random(in: 0...3, using: &rng)).map { _ in Self.argumentPool.randomElement(using: &rng) ?? .key("x") }
            }
            do {
                _ = try PredicateParser.parse(format, arguments: arguments)
                parsed += 1
            } catch let error as CumulusError {
                refused += 1
                if error.code != .invalidArguments || !Self.hasValidPosition(error.message, in: format) {
                    failures.append("\(format.debugDescription) → \(error)")
                }
            } catch {
                failures.append("\(format.debugDescription) → non-Cumulus error \(error)")
            }
            if failures.count > 20 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        // Both outcomes must be exercised, or the mutations are too weak or too strong.
        #expect(parsed > 1_000, "only \(parsed) parsed")
        #expect(refused > 1_000, "only \(refused) refused")
    }

    /// A refusal names a position inside (or at the end of) the input.
    static func hasValidPosition(_ message: String, in format: String) -> Bool {
        guard let range = message.range(of: "at position ") else { return false }
        let digits = message[range.upperBound...].prefix { $0.isNumber }
        guard let position = Int(digits) else { return false }
        return position >= 0 && position <= format.unicodeScalars.count
    }

    static func mutant(iteration: Int, rng: inout SeededRandom) -> String {
        let base = corpus.randomElement(using: &rng) ?? "x == 1"
        switch iteration % 10 {
        case 0:
            return base
        case 1:
            return randomScalars(count: Int.random(in: 0...40, using: &rng), rng: &rng)
        case 2:
            // Deep nesting of one opener, sometimes huge.
            let opener = ["(", "NOT ", "!(", "{", "((", "NOT (", "'", "ANY "].randomElement(using: &rng) ?? "("
            let count = iteration % 1_000 == 2 ? 10_000 : Int.random(in: 1...200, using: &rng)
            let closer = Bool.random(using: &rng) ? String(repeating: ")", count: count) : ""
            return String(repeating: opener, count: count) + base + closer
        case 3:
            // Splice two corpus entries at random points.
            let other = corpus.randomElement(using: &rng) ?? base
            let a = Array(base.unicodeScalars)
            let b = Array(other.unicodeScalars)
            let i = Int.random(in: 0...a.count, using: &rng)
            let j = Int.random(in: 0...b.count, using: &rng)
            var out = String.UnicodeScalarView()
            out.append(contentsOf: a[..<i])
            out.append(contentsOf: b[j...])
            return String(out)
        default:
            var scalars = Array(base.unicodeScalars)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                mutate(&scalars, rng: &rng)
            }
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars)
            return String(out)
        }
    }

    static func mutate(_ scalars: inout [Unicode.Scalar], rng: inout SeededRandom) {
        let position = Int.random(in: 0...scalars.count, using: &rng)
        switch Int.random(in: 0..<5, using: &rng) {
        case 0:
            scalars.insert(randomScalar(rng: &rng), at: position)
        case 1:
            if position < scalars.count { scalars.remove(at: position) }
        case 2:
            if position < scalars.count { scalars[position] = randomScalar(rng: &rng) }
        case 3:
            let fragment = fragments.randomElement(using: &rng) ?? "("
            scalars.insert(contentsOf: fragment.unicodeScalars, at: position)
        default:
            // Duplicate or drop a run, which unbalances quotes and brackets.
            let end = min(scalars.count, position + Int.random(in: 1...8, using: &rng))
            if Bool.random(using: &rng) {
                scalars.insert(contentsOf: Array(scalars[position..<end]), at: end)
            } else {
                scalars.removeSubrange(position..<end)
            }
        }
    }

    static func randomScalars(count: Int, rng: inout SeededRandom) -> String {
        var out = String.UnicodeScalarView()
        for _ in 0..<count { out.append(randomScalar(rng: &rng)) }
        return String(out)
    }

    static func randomScalar(rng: inout SeededRandom) -> Unicode.Scalar {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<6:
            return Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng))
        case 6:
            return Unicode.Scalar(UInt8.random(in: 0...0xFF, using: &rng))
        default:
            // Any scalar, surrogates excluded by the failable initializer's retry.
            while true {
                if let scalar = Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &rng)) { return scalar }
            }
        }
    }
}
