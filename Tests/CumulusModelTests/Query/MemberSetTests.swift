import CumulusTestSupport
import Testing
@testable import CumulusModel

/// ``MemberSet`` must answer exactly what comparing each member with
/// `QueryEvaluator.equal` answers: it replaced that loop in every `IN`-like filter.
@Suite("Query: hashed filter lists")
struct MemberSetTests {
    /// A value from a small pool, so that equal values across kinds come up often:
    /// strings in two cases and two Unicode spellings, references naming the same
    /// records, integers that are also doubles and timestamps.
    static func value(_ random: inout SeededRandom) -> FieldValue {
        let n = Int64.random(in: -3...3, using: &random)
        let names = ["a", "A", "b", "é", "e\u{301}", "É", "zone-x"]
        let name = names[Int.random(in: 0..<names.count, using: &random)]
        switch Int.random(in: 0..<9, using: &random) {
        case 0: return .string(name)
        case 1: return .reference(Reference(recordID: RecordID(recordName: name)))
        case 2:
            return .reference(Reference(recordID: RecordID(recordName: name, zoneID: ZoneID(zoneName: "Z", ownerName: "_o"))))
        case 3: return .int64(n)
        case 4: return .double([Double(n), Double(n) + 0.5, -0.0, .nan, .infinity][Int.random(in: 0..<5, using: &random)])
        case 5: return .timestamp(Timestamp(millisecondsSince1970: n))
        case 6: return .bytes([UInt8(truncatingIfNeeded: n)])
        case 7: return .location(Location(latitude: Double(n), longitude: 1))
        default: return .int64(Int64.max - Int64.random(in: 0...1, using: &random))
        }
    }

    @Test("contains agrees with a pass of QueryEvaluator.equal over the members, for every kind")
    func agreesWithEquality() {
        var random = SeededRandom(seed: 40)
        for round in 0..<2_000 {
            let members = (0..<Int.random(in: 0...6, using: &random)).map { _ in Self.value(&random) }
            let set = MemberSet(members)
            for _ in 0..<8 {
                let probe = Self.value(&random)
                let expected = members.contains { QueryEvaluator.equal(probe, $0) }
                #expect(set.contains(probe) == expected, "round \(round): \(probe) in \(members)")
            }
        }
    }

    @Test("IN and LIST_CONTAINS_ALL answer through the set as they did pairwise")
    func filtersUseTheSet() {
        let record = Record(recordType: "T", recordID: RecordID(recordName: "r"), fields: ["tags": .list((0..<100).map { .string("Tag\($0)") }), "n": .int64(7)])
        let anyOf = Query(
            recordType: "T",
            filters: [QueryFilter(key: .field("n"), comparator: .in, value: .list((0..<1_000).map { .double(Double($0)) }))])
        #expect(QueryEvaluator.matches(record, anyOf))
        let allOf = Query(
            recordType: "T",
            filters: [QueryFilter(key: .field("tags"), comparator: .listContainsAll, value: .list((0..<50).map { .string("tag\($0)") }))])
        #expect(QueryEvaluator.matches(record, allOf))
        var missing = allOf
        missing.filters[0].value = .list([.string("tag1"), .string("nope")])
        #expect(!QueryEvaluator.matches(record, missing))
        // The set follows a changed value.
        var notIn = anyOf
        notIn.filters[0].comparator = .notIn
        #expect(!QueryEvaluator.matches(record, notIn))
        notIn.filters[0].value = .list([.int64(8)])
        #expect(QueryEvaluator.matches(record, notIn))
    }

    @Test("the bounds name what they bound")
    func bounds() throws {
        let wide = Query(
            recordType: "T",
            filters: [QueryFilter(key: .field("n"), comparator: .notIn, value: .list((0..<1_001).map { .int64(Int64($0)) }))])
        #expect(wide.filters[0].members == nil, "no set is built past the bound")
        #expect { try QueryBounds.check(wide) } throws: { ($0 as? CumulusError)?.code == .limitExceeded }
        let many = Query(recordType: "T", filters: Array(repeating: QueryFilter(key: .field("n"), comparator: .equals, value: .int64(1)), count: 65))
        #expect { try QueryBounds.check(many) } throws: { ($0 as? CumulusError)?.message.contains("65 filters") == true }
        let words = (0..<101).map { "word\($0)" }.joined(separator: " ")
        let tokens = Query(
            recordType: "T", filters: [QueryFilter(key: .allTokens, comparator: .containsAnyTokens, value: .string(words))])
        #expect { try QueryBounds.check(tokens) } throws: { ($0 as? CumulusError)?.message.contains("101 distinct tokens") == true }
        try QueryBounds.check(Query(recordType: "T", filters: Array(many.filters.prefix(64))))
    }
}
