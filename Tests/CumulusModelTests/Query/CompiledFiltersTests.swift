import CumulusTestSupport
import Testing
@testable import CumulusModel

/// ``CompiledFilters`` must answer exactly what ``QueryEvaluator`` answers on the
/// decoded record: it replaced that per-filter decode on the query plans' reads.
@Suite("Query: filters compiled for stored bytes")
struct CompiledFiltersTests {
    static let home = ZoneID(zoneName: "Z", ownerName: "_o")

    /// Strings chosen for the ASCII folding path and its edges: cases, a prefix of
    /// another, bytes past the shared part that are not ASCII, precomposed and
    /// decomposed accents, a capital whose lower case is not one byte.
    static let strings = ["", "a", "A", "ab", "aB", "abc", "Abd", "b", "B", "zz", "é", "É", "e\u{301}", "aé", "AÉ", "straße",
        "STRASSE", "İ", "i", "apple pie", "APPLE", "apple\u{0}"]

    /// A scalar that can be stored (stored doubles are finite).
    static func scalar(_ random: inout SeededRandom) -> FieldValue {
        let n = Int64.random(in: -3...3, using: &random)
        let name = strings[Int.random(in: 0..<strings.count, using: &random)]
        switch Int.random(in: 0..<9, using: &random) {
        case 0, 1, 2: return .string(name)
        case 3: return .reference(Reference(recordID: RecordID(recordName: name, zoneID: home)))
        case 4: return .int64(n)
        case 5: return .double([Double(n), Double(n) + 0.5, -0.0][Int.random(in: 0..<3, using: &random)])
        case 6: return .timestamp(Timestamp(millisecondsSince1970: n))
        case 7: return .bytes([UInt8(truncatingIfNeeded: n)])
        default: return .location(Location(latitude: Double(n), longitude: 1))
        }
    }

    /// A stored field's value: a scalar, a list of one kind, or an empty list.
    static func stored(_ random: inout SeededRandom) -> FieldValue {
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1, 2: return scalar(&random)
        case 3: return .list([])
        default:
            let first = scalar(&random)
            var items = [first]
            for _ in 0..<Int.random(in: 0..<4, using: &random) {
                var next = scalar(&random)
                while next.scalarType != first.scalarType { next = scalar(&random) }
                items.append(next)
            }
            return .list(items)
        }
    }

    /// A filter value for `comparator`: lists for the membership comparators, a
    /// location for `NEAR`, anything (some that do not compare) otherwise.
    static func filterValue(_ comparator: QueryComparator, _ random: inout SeededRandom) -> FieldValue {
        if comparator.testsMembership {
            return .list((0..<Int.random(in: 0..<4, using: &random)).map { _ in scalar(&random) })
        }
        if comparator == .near { return .location(Location(latitude: 0, longitude: 1)) }
        if comparator == .equals, Int.random(in: 0..<5, using: &random) == 0 { return stored(&random) }
        return Int.random(in: 0..<4, using: &random) == 0 ? .double(.nan) : scalar(&random)
    }

    static let comparators = QueryComparator.allCases.filter { $0 != .containsAllTokens && $0 != .containsAnyTokens }

    func record(_ fields: [String: FieldValue]) throws -> [UInt8] {
        try RecordCodec.encode(Record(recordType: "T", recordID: RecordID(recordName: "r", zoneID: Self.home), fields: fields))
    }

    @Test("one filter: the compiled answer is the evaluator's, for every comparator and kind of value")
    func oneFilter() throws {
        var random = SeededRandom(seed: 42)
        var matched = 0
        for round in 0..<20_000 {
            let comparator = Self.comparators[round % Self.comparators.count]
            let value = Self.filterValue(comparator, &random)
            let filter = QueryFilter(
                key: .field("f"), comparator: comparator, value: value, distance: comparator == .near ? 400_000 : nil)
            let field: FieldValue? = Int.random(in: 0..<8, using: &random) == 0 ? nil : Self.stored(&random)
            // Other fields around it, so the walk skips before and after.
            var fields: [String: FieldValue] = ["a": .int64(1), "g": .string("x")]
            fields["f"] = field
            let bytes = try record(fields)
            let compiled = try #require(CompiledFilters([filter]))
            let got = try bytes.withUnsafeBytes { try compiled.matches($0, home: Self.home) }
            let want = QueryEvaluator.matches(fieldValue: field, filter)
            #expect(got == want, "\(comparator) \(value) on \(String(describing: field))")
            if want { matched += 1 }
        }
        // Both answers come up often, so agreement is not agreement on `false`.
        #expect(matched > 3_000 && matched < 17_000)
    }

    @Test("several filters, some on one key and some on absent keys: the AND of the evaluator's answers")
    func severalFilters() throws {
        var random = SeededRandom(seed: 7)
        let keys = ["a", "m", "mm", "z", "é"]
        var matched = 0
        for _ in 0..<5_000 {
            var fields: [String: FieldValue] = [:]
            for key in keys where Bool.random(using: &random) { fields[key] = Self.stored(&random) }
            var filters: [QueryFilter] = []
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let comparator = [QueryComparator.notEquals, .notIn, .notBeginsWith, .notListContains, .lessThan, .equals][
                    Int.random(in: 0..<6, using: &random)]
                filters.append(
                    QueryFilter(
                        key: .field(keys[Int.random(in: 0..<keys.count, using: &random)]), comparator: comparator,
                        value: Self.filterValue(comparator, &random)))
            }
            let bytes = try record(fields)
            let compiled = try #require(CompiledFilters(filters))
            let got = try bytes.withUnsafeBytes { try compiled.matches($0, home: Self.home) }
            let want = filters.allSatisfy { filter in
                guard case .field(let key) = filter.key else { return false }
                return QueryEvaluator.matches(fieldValue: fields[key], filter)
            }
            #expect(got == want, "\(filters) on \(fields)")
            if want { matched += 1 }
        }
        #expect(matched > 500 && matched < 4_500)
    }

    @Test("token filters and system fields are not compiled")
    func notCompiled() {
        #expect(CompiledFilters([QueryFilter(key: .field("f"), comparator: .containsAnyTokens, value: .string("a"))]) == nil)
        #expect(CompiledFilters([QueryFilter(key: .recordName, comparator: .equals, value: .string("a"))]) == nil)
        #expect(CompiledFilters([]) != nil)
    }

    @Test("damaged bytes are an error, not a record that fails to match")
    func damaged() throws {
        var bytes = try record(["f": .string("abc")])
        // The string's last byte becomes a lone continuation byte... and the length
        // past the end: either way the read must throw, not trap or answer.
        let compiled = try #require(CompiledFilters([QueryFilter(key: .field("f"), comparator: .equals, value: .string("x"))]))
        bytes.removeLast(2)
        #expect(throws: CumulusError.self) { try bytes.withUnsafeBytes { try compiled.matches($0, home: Self.home) } }
        // A string's byte made invalid UTF-8, for every test a string meets.
        var invalid = try record(["f": .string("zebra c")])
        let at = try #require((0...(invalid.count - 7)).first { Array(invalid[$0..<$0 + 7]) == Array("zebra c".utf8) })
        invalid[at + 6] = 0xFF
        for comparator in [QueryComparator.equals, .notEquals, .lessThan, .greaterThanOrEquals, .beginsWith, .in, .listContains] {
            let value: FieldValue = comparator.testsMembership ? .list([.string("zebra")]) : .string("zebra")
            let filter = try #require(CompiledFilters([QueryFilter(key: .field("f"), comparator: comparator, value: value)]))
            #expect(throws: CumulusError.self, "\(comparator)") {
                try invalid.withUnsafeBytes { try filter.matches($0, home: Self.home) }
            }
        }
        // Damage after an element that already answers: the value is still checked whole.
        var list = try record(["tags": .list([.string("zebra"), .string("yak c")])])
        let second = try #require((0...(list.count - 5)).first { Array(list[$0..<$0 + 5]) == Array("yak c".utf8) })
        list[second + 4] = 0xFF
        for comparator in [QueryComparator.listContains, .notEquals, .in, .beginsWith] {
            let value: FieldValue = comparator.testsMembership ? .list([.string("zebra")]) : .string("zebra")
            let filter = try #require(CompiledFilters([QueryFilter(key: .field("tags"), comparator: comparator, value: value)]))
            #expect(throws: CumulusError.self, "\(comparator) on a damaged list") {
                try list.withUnsafeBytes { try filter.matches($0, home: Self.home) }
            }
        }
    }
}
