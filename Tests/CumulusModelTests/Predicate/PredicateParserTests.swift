import Testing
@testable import CumulusModel

/// The filters `format` parses to; a refusal fails the test.
private func filters(_ format: String, _ arguments: [PredicateArgument] = [], sourceLocation: SourceLocation = #_sourceLocation) -> [QueryFilter] {
    do {
        let result = try PredicateParser.parse(format, arguments: arguments)
        #expect(!result.matchesNothing, "\(format) matches nothing", sourceLocation: sourceLocation)
        return result.filters
    } catch {
        Issue.record("\(format) was refused: \(error)", sourceLocation: sourceLocation)
        return []
    }
}

/// Asserts `format` is refused with `invalidArguments`, a message naming `construct`,
/// at `position` (defaulting to where `marker` first occurs in `format`).
private func expectRefusal(
    _ format: String, _ arguments: [PredicateArgument] = [], names construct: String,
    at position: Int? = nil, marker: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    let expected = position ?? marker.flatMap { scalarOffset(of: $0, in: format) } ?? scalarOffset(of: construct, in: format) ?? -1
    do {
        let result = try PredicateParser.parse(format, arguments: arguments)
        Issue.record("\(format) parsed to \(result), expected a refusal", sourceLocation: sourceLocation)
    } catch let error as CumulusError {
        #expect(error.code == .invalidArguments, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(construct), "\(error.message) does not name \(construct)", sourceLocation: sourceLocation)
        #expect(
            error.message.contains("at position \(expected)") && !error.message.contains("at position \(expected)0"),
            "\(error.message): expected position \(expected)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(format): unexpected error \(error)", sourceLocation: sourceLocation)
    }
}

private func scalarOffset(of needle: String, in haystack: String) -> Int? {
    let h = Array(haystack.unicodeScalars)
    let n = Array(needle.unicodeScalars)
    guard !n.isEmpty, n.count <= h.count else { return nil }
    for start in 0...(h.count - n.count) where Array(h[start..<start + n.count]) == n { return start }
    return nil
}

private func f(_ key: QueryKey, _ comparator: QueryComparator, _ value: FieldValue, distance: Double? = nil) -> QueryFilter {
    QueryFilter(key: key, comparator: comparator, value: value, distance: distance)
}

private let x = QueryKey.field("x")
private let tags = QueryKey.field("tags")
private let name = QueryKey.field("name")

@Suite("Predicate parser: accepted constructs")
struct PredicateParserTests {
    @Test("comparison operators and their spellings")
    func comparisons() {
        #expect(filters("x == 5") == [f(x, .equals, .int64(5))])
        #expect(filters("x = 5") == [f(x, .equals, .int64(5))])
        #expect(filters("x != 5") == [f(x, .notEquals, .int64(5))])
        #expect(filters("x <> 5") == [f(x, .notEquals, .int64(5))])
        #expect(filters("x < 5") == [f(x, .lessThan, .int64(5))])
        #expect(filters("x <= 5") == [f(x, .lessThanOrEquals, .int64(5))])
        #expect(filters("x =< 5") == [f(x, .lessThanOrEquals, .int64(5))])
        #expect(filters("x > 5") == [f(x, .greaterThan, .int64(5))])
        #expect(filters("x >= 5") == [f(x, .greaterThanOrEquals, .int64(5))])
        #expect(filters("x => 5") == [f(x, .greaterThanOrEquals, .int64(5))])
        #expect(filters("x>=-5") == [f(x, .greaterThanOrEquals, .int64(-5))])
        #expect(filters("  x\t==\n'a'  ") == [f(x, .equals, .string("a"))])
    }

    @Test("a value on the left is normalized to key-first")
    func reversedOperands() {
        #expect(filters("5 < x") == [f(x, .greaterThan, .int64(5))])
        #expect(filters("5 <= x") == [f(x, .greaterThanOrEquals, .int64(5))])
        #expect(filters("5 > x") == [f(x, .lessThan, .int64(5))])
        #expect(filters("5 >= x") == [f(x, .lessThanOrEquals, .int64(5))])
        #expect(filters("'a' == name") == [f(name, .equals, .string("a"))])
        #expect(filters("%@ != name", [.value(.string("a"))]) == [f(name, .notEquals, .string("a"))])
    }

    @Test("BETWEEN becomes two bounds")
    func between() {
        #expect(filters("x BETWEEN {1, 10}") == [f(x, .greaterThanOrEquals, .int64(1)), f(x, .lessThanOrEquals, .int64(10))])
        #expect(
            filters("x between %@", [.value(.list([.double(0.5), .double(2)]))])
                == [f(x, .greaterThanOrEquals, .double(0.5)), f(x, .lessThanOrEquals, .double(2))])
        #expect(
            filters("x BETWEEN {1, 2.5}") == [f(x, .greaterThanOrEquals, .double(1)), f(x, .lessThanOrEquals, .double(2.5))])
        let t1 = FieldValue.timestamp(Timestamp(millisecondsSince1970: 1))
        let t2 = FieldValue.timestamp(Timestamp(millisecondsSince1970: 2))
        #expect(
            filters("creationDate BETWEEN {%@, %@}", [.value(t1), .value(t2)])
                == [f(.creationDate, .greaterThanOrEquals, t1), f(.creationDate, .lessThanOrEquals, t2)])
    }

    @Test("IN and NOT IN")
    func membership() {
        let list = FieldValue.list([.string("a"), .string("b")])
        #expect(filters("x IN {'a', 'b'}") == [f(x, .in, list)])
        #expect(filters("x IN %@", [.value(list)]) == [f(x, .in, list)])
        #expect(filters("x IN {}") == [f(x, .in, .list([]))])
        #expect(filters("NOT (x IN {'a', 'b'})") == [f(x, .notIn, list)])
        #expect(filters("NOT x IN {'a', 'b'}") == [f(x, .notIn, list)])
        #expect(filters("!(x IN %@)", [.value(list)]) == [f(x, .notIn, list)])
        #expect(filters("ANY tags IN {'a', 'b'}") == [f(tags, .listContainsAny, list)])
        #expect(filters("NOT (ANY tags IN {'a', 'b'})") == [f(tags, .notListContainsAny, list)])
    }

    @Test("BEGINSWITH on strings and list members")
    func beginsWith() {
        #expect(filters("name BEGINSWITH 'Jo'") == [f(name, .beginsWith, .string("Jo"))])
        #expect(filters("name beginswith %@", [.value(.string("Jo"))]) == [f(name, .beginsWith, .string("Jo"))])
        #expect(filters("NOT (name BEGINSWITH 'Jo')") == [f(name, .notBeginsWith, .string("Jo"))])
        #expect(filters("ANY tags BEGINSWITH 'x'") == [f(tags, .listMemberBeginsWith, .string("x"))])
        #expect(filters("NOT (ANY tags BEGINSWITH 'x')") == [f(tags, .notListMemberBeginsWith, .string("x"))])
    }

    @Test("list membership: CONTAINS, ANY/SOME ==, value IN key")
    func listMembership() {
        let a = [f(tags, .listContains, .string("a"))]
        #expect(filters("tags CONTAINS 'a'") == a)
        #expect(filters("ANY tags == 'a'") == a)
        #expect(filters("SOME tags = 'a'") == a)
        #expect(filters("any tags == 'a'") == a)
        #expect(filters("'a' IN tags") == a)
        #expect(filters("tags CONTAINS %@", [.value(.int64(3))]) == [f(tags, .listContains, .int64(3))])
        let notA = [f(tags, .notListContains, .string("a"))]
        #expect(filters("NOT (tags CONTAINS 'a')") == notA)
        #expect(filters("NOT ANY tags == 'a'") == notA)
        #expect(filters("NOT ('a' IN tags)") == notA)
    }

    @Test("token search: self CONTAINS and allTokens TOKENMATCHES")
    func tokenSearch() {
        let search = [f(.allTokens, .containsAllTokens, .string("a b"))]
        #expect(filters("self CONTAINS 'a b'") == search)
        #expect(filters("SELF contains 'a b'") == search)
        #expect(filters("self CONTAINS[cd] 'a b'") == search)
        #expect(filters("allTokens TOKENMATCHES[cdw] 'a b'") == search)
        #expect(filters("allTokens TOKENMATCHES 'a b'") == search)
        #expect(filters("allTokens tokenmatches[c] %@", [.value(.string("a b"))]) == search)
    }

    @Test("distanceToLocation:fromLocation: is NEAR with the radius")
    func distance() {
        let here = Location(latitude: 48.85, longitude: 2.35)
        let near = [f(.field("location"), .near, .location(here), distance: 1000)]
        #expect(filters("distanceToLocation:fromLocation:(location, %@) < 1000", [.value(.location(here))]) == near)
        #expect(filters("distanceToLocation:fromLocation:(location, %@) <= 1000.0", [.value(.location(here))]) == near)
        #expect(filters("1000 > distanceToLocation:fromLocation:(location, %@)", [.value(.location(here))]) == near)
        #expect(
            filters("distanceToLocation:fromLocation:(%K, %@) < %@", [.key("location"), .value(.location(here)), .value(.double(1000))])
                == near)
    }

    @Test("AND, && and parentheses flatten")
    func conjunctions() {
        let three = [f(.field("a"), .equals, .int64(1)), f(.field("b"), .equals, .int64(2)), f(.field("c"), .equals, .int64(3))]
        #expect(filters("a == 1 AND b == 2 AND c == 3") == three)
        #expect(filters("a == 1 && b == 2 and c == 3") == three)
        #expect(filters("(a == 1 AND (b == 2 && (c == 3)))") == three)
        #expect(filters("((a == 1)) AnD ((b == 2 AND c == 3))") == three)
    }

    @Test("NOT over equality flips it; double NOT cancels")
    func negation() {
        #expect(filters("NOT (a == 1)") == [f(.field("a"), .notEquals, .int64(1))])
        #expect(filters("NOT a != 1") == [f(.field("a"), .equals, .int64(1))])
        #expect(filters("!(a == 1) AND b == 2") == [f(.field("a"), .notEquals, .int64(1)), f(.field("b"), .equals, .int64(2))])
        #expect(filters("NOT NOT a == 1") == [f(.field("a"), .equals, .int64(1))])
    }

    @Test("TRUEPREDICATE and FALSEPREDICATE")
    func constants() throws {
        #expect(try PredicateParser.parse("TRUEPREDICATE") == ([], false))
        #expect(try PredicateParser.parse("truepredicate") == ([], false))
        #expect(try PredicateParser.parse("FALSEPREDICATE") == ([], true))
        #expect(try PredicateParser.parse("x == 1 AND FALSEPREDICATE") == ([], true))
        #expect(try PredicateParser.parse("NOT TRUEPREDICATE") == ([], true))
        #expect(try PredicateParser.parse("NOT FALSEPREDICATE") == ([], false))
        #expect(try PredicateParser.parse("TRUEPREDICATE AND x == 1") == ([f(x, .equals, .int64(1))], false))
        let query = try PredicateParser.query(recordType: "Item", predicate: "FALSEPREDICATE")
        #expect(query == Query(recordType: "Item", matchesNothing: true))
    }

    @Test("%@ and %K arguments")
    func arguments() {
        let owner = Reference(recordID: RecordID(recordName: "u1", zoneID: ZoneID(zoneName: "Z")))
        #expect(filters("%K == %@", [.key("title"), .value(.string("t"))]) == [f(.field("title"), .equals, .string("t"))])
        #expect(filters("owner == %@", [.value(.reference(owner))]) == [f(.field("owner"), .equals, .reference(owner))])
        #expect(filters("%K > %@", [.key("___createTime"), .value(.int64(0))]) == [f(.creationDate, .greaterThan, .int64(0))])
        #expect(filters("%K CONTAINS %@", [.key("tags"), .value(.string("a"))]) == [f(tags, .listContains, .string("a"))])
    }

    @Test("system keys resolve through QueryKey(name:)")
    func systemKeys() {
        let ref = FieldValue.reference(Reference(recordID: RecordID(recordName: "r")))
        #expect(filters("recordID == %@", [.value(ref)]) == [f(.recordName, .equals, ref)])
        #expect(filters("recordName == %@", [.value(ref)]) == [f(.recordName, .equals, ref)])
        #expect(filters("creationDate > 0") == [f(.creationDate, .greaterThan, .int64(0))])
        #expect(filters("modificationDate < 5") == [f(.modificationDate, .lessThan, .int64(5))])
        #expect(filters("creatorUserRecordID == %@", [.value(ref)]) == [f(.creatorUserRecordID, .equals, ref)])
        #expect(filters("lastModifiedUserRecordID == %@", [.value(ref)]) == [f(.lastModifiedUserRecordID, .equals, ref)])
        #expect(filters("parent == %@", [.value(ref)]) == [f(.parent, .equals, ref)])
        #expect(filters("share == %@", [.value(ref)]) == [f(.share, .equals, ref)])
    }

    @Test("string literals and escapes")
    func strings() {
        func value(_ literal: String) -> FieldValue? { filters("x == \(literal)").first?.value }
        #expect(value("'plain'") == .string("plain"))
        #expect(value("\"double\"") == .string("double"))
        #expect(value(#"'it\'s'"#) == .string("it's"))
        #expect(value(#""say \"hi\"""#) == .string("say \"hi\""))
        #expect(value(#"'back\\slash'"#) == .string("back\\slash"))
        #expect(value(#"'a\nb\tc\rd\0'"#) == .string("a\nb\tc\rd\0"))
        #expect(value(#"'caf\u00e9'"#) == .string("café"))
        #expect(value(#"'\u{1F600}'"#) == .string("😀"))
        #expect(value(#"'\uD83D\uDE00'"#) == .string("😀"))
        #expect(value("'naïve 日本 😀'") == .string("naïve 日本 😀"))
        #expect(value("'\"'") == .string("\""))
        #expect(value("''") == .string(""))
        #expect(value("'e\u{301}'") == .string("e\u{301}"))
    }

    @Test("number, boolean and aggregate literals")
    func literals() {
        func value(_ literal: String) -> FieldValue? { filters("x == \(literal)").first?.value }
        #expect(value("42") == .int64(42))
        #expect(value("-7") == .int64(-7))
        #expect(value("9223372036854775807") == .int64(.max))
        #expect(value("-9223372036854775808") == .int64(.min))
        #expect(value("2.5") == .double(2.5))
        #expect(value("1e3") == .double(1000))
        #expect(value("-1.5E-3") == .double(-0.0015))
        #expect(value("TRUE") == .int64(1))
        #expect(value("yes") == .int64(1))
        #expect(value("False") == .int64(0))
        #expect(value("NO") == .int64(0))
        #expect(filters("x IN {1, 2, 3}") == [f(x, .in, .list([.int64(1), .int64(2), .int64(3)]))])
        #expect(filters("x IN {1, 2.5}") == [f(x, .in, .list([.double(1), .double(2.5)]))])
        #expect(filters("x IN {true, NO}") == [f(x, .in, .list([.int64(1), .int64(0)]))])
        #expect(filters("x IN {'a', %@}", [.value(.string("b"))]) == [f(x, .in, .list([.string("a"), .string("b")]))])
    }

    @Test("query(recordType:predicate:) carries type, filters and sort")
    func query() throws {
        let sort = [QuerySort(key: .creationDate, ascending: false)]
        let query = try PredicateParser.query(recordType: "Note", predicate: "x == 1", sort: sort)
        #expect(query == Query(recordType: "Note", filters: [f(x, .equals, .int64(1))], sort: sort))
    }
}

@Suite("Predicate parser: refusals")
struct PredicateRefusalTests {
    @Test("OR in both spellings")
    func or() {
        expectRefusal("a == 1 OR b == 2", names: "OR is not supported by CloudKit queries", at: 7)
        expectRefusal("a == 1 || b == 2", names: "OR is not supported", at: 7)
        expectRefusal("a == 1 or b == 2", names: "OR is not supported", at: 7)
        expectRefusal("(a == 1 AND b == 2) OR c == 3", names: "OR is not supported", at: 20)
    }

    @Test("unsupported quantifiers and operators")
    func unsupportedOperators() {
        expectRefusal("ALL tags == 'a'", names: "ALL", at: 0)
        expectRefusal("NONE tags == 'a'", names: "NONE", at: 0)
        expectRefusal("name ENDSWITH 'a'", names: "ENDSWITH", at: 5)
        expectRefusal("name LIKE 'a*'", names: "LIKE", at: 5)
        expectRefusal("name MATCHES 'a.*'", names: "MATCHES", at: 5)
        expectRefusal("SUBQUERY(tags, $t, $t == 'a').@count > 0", names: "SUBQUERY", at: 0)
        expectRefusal("FUNCTION(x, 'foo') == 1", names: "FUNCTION", at: 0)
        expectRefusal("x == now()", names: "function 'now'", at: 5)
        expectRefusal("x == nil", names: "NIL", at: 5)
        expectRefusal("x == NULL", names: "NULL", at: 5)
        expectRefusal("x == $v", names: "variable", at: 5)
        expectRefusal("tags.@count > 1", names: "key path", at: 0)
        expectRefusal("x % 2 == 0", names: "format specifier '%", at: 2)
    }

    @Test("key paths")
    func keyPaths() {
        expectRefusal("owner.name == 'x'", names: "key path 'owner.", at: 0)
        expectRefusal("a == 1 AND owner.name == 'x'", names: "key path", at: 11)
        expectRefusal("%K == 1", [.key("owner.name")], names: "key path 'owner.name'", at: 0)
    }

    @Test("options on anything but token searches")
    func options() {
        expectRefusal("name CONTAINS[c] 'a'", names: "CONTAINS[c]", at: 13)
        expectRefusal("name CONTAINS[cd] 'a'", names: "CONTAINS[cd]", at: 13)
        expectRefusal("name BEGINSWITH[c] 'a'", names: "BEGINSWITH[c]", at: 15)
        expectRefusal("name ==[c] 'a'", names: "==[c]", at: 7)
        expectRefusal("allTokens TOKENMATCHES[x] 'a'", names: "options [x]", at: 22)
        expectRefusal("self CONTAINS[w] 'a'", names: "options [w]", at: 13)
        expectRefusal("self CONTAINS[] 'a'", names: "malformed comparison options", at: 13)
    }

    @Test("NOT where CloudKit cannot negate")
    func negation() {
        expectRefusal("NOT (a == 1 AND b == 2)", names: "NOT over AND", at: 0)
        expectRefusal("x == 1 AND NOT (a == 1 && b == 2)", names: "NOT over AND", at: 11)
        expectRefusal("NOT (self CONTAINS 'x')", names: "NOT over a token search", at: 0)
        expectRefusal("NOT allTokens TOKENMATCHES 'x'", names: "NOT over a token search", at: 0)
        expectRefusal("NOT (x BETWEEN {1, 2})", names: "NOT over BETWEEN", at: 0)
        let here = PredicateArgument.value(.location(Location(latitude: 0, longitude: 0)))
        expectRefusal("NOT (distanceToLocation:fromLocation:(loc, %@) < 5)", [here], names: "NOT over a distance", at: 0)
        expectRefusal("NOT (x < 5)", names: "NOT over <", at: 0)
        expectRefusal("!(x >= 5)", names: "NOT over >=", at: 0)
    }

    @Test("distance misuse")
    func distanceMisuse() {
        let here = PredicateArgument.value(.location(Location(latitude: 0, longitude: 0)))
        expectRefusal("distanceToLocation:fromLocation:(loc, %@) > 5", [here], names: "distance compared with >", marker: ">")
        expectRefusal("5 < distanceToLocation:fromLocation:(loc, %@)", [here], names: "distance compared with <", at: 2)
        expectRefusal("distanceToLocation:fromLocation:(loc, %@) == 5", [here], names: "distance compared with ==", marker: "==")
        expectRefusal("distanceToLocation:fromLocation:(loc, %@) < -1", [here], names: "negative radius", marker: "-1")
        expectRefusal("distanceToLocation:fromLocation:(loc, %@) < 'far'", [here], names: "other than a number", marker: "'far'")
        expectRefusal(
            "distanceToLocation:fromLocation:(loc, %@) < 5", [.value(.string("x"))], names: "without a location argument", marker: "%@")
        expectRefusal("distanceToLocation:fromLocation:(loc, 'here') < 5", names: "malformed distanceToLocation", marker: "'here'")
        expectRefusal("distanceToLocation:(loc, %@) < 5", [here], names: "malformed distanceToLocation", at: 19)
    }

    @Test("operand misuse")
    func operands() {
        expectRefusal("a == b", names: "== between the key 'a' and the key 'b'", at: 0)
        expectRefusal("1 == 2", names: "between a value and a value", at: 0)
        expectRefusal("x == {1, 2}", names: "== with a list", at: 5)
        expectRefusal("x IN 5", names: "IN with a single value", at: 5)
        expectRefusal("x IN %@", [.value(.string("a"))], names: "IN with a single value", at: 5)
        expectRefusal("self == 'x'", names: "self with ==", at: 0)
        expectRefusal("tags CONTAINS {1, 2}", names: "CONTAINS with a list", at: 14)
        expectRefusal("ANY tags CONTAINS 'a'", names: "ANY … CONTAINS", at: 9)
        expectRefusal("ANY tags < 3", names: "ANY with <", at: 9)
        expectRefusal("ANY tags BETWEEN {1, 2}", names: "ANY with BETWEEN", at: 0)
        expectRefusal("name BEGINSWITH 5", names: "BEGINSWITH without a string", at: 16)
        expectRefusal("x BETWEEN {1}", names: "BETWEEN without two bounds", at: 10)
        expectRefusal("x BETWEEN 1", names: "BETWEEN without two bounds", at: 10)
        expectRefusal("name TOKENMATCHES 'a'", names: "TOKENMATCHES on something other than allTokens", at: 0)
        expectRefusal("self CONTAINS 5", names: "without a string", at: 14)
        expectRefusal("x IN {1, 'a'}", names: "a list mixing INT64, STRING", at: 5)
        expectRefusal("x IN {1, {2}}", names: "nested aggregate", at: 9)
        expectRefusal("x IN {1, y}", names: "the key 'y' inside an aggregate", at: 9)
        expectRefusal("x IN {1, 2", names: "inside an aggregate", at: 10)
        expectRefusal("x IN %@", [.value(.list([.string("a"), .int64(1)]))], names: "a list mixing", at: 5)
        expectRefusal("x == in", names: "unexpected keyword 'in'", at: 5)
    }

    @Test("arguments: missing, extra, wrong kind")
    func arguments() {
        expectRefusal("x == %@", names: "%@ without an argument (0 given)", at: 5)
        expectRefusal("x == %@ AND y == %@", [.value(.int64(1))], names: "%@ without an argument (1 given)", at: 17)
        expectRefusal("%K == 1", names: "%K without an argument", at: 0)
        expectRefusal("x == 1", [.value(.int64(1))], names: "too many arguments (1 given, the format uses 0)", at: 6)
        expectRefusal("%K == 1", [.value(.int64(1))], names: "%K with a value argument", at: 0)
        expectRefusal("x == %@", [.key("y")], names: "%@ with the key argument 'y'", at: 5)
        expectRefusal("%K == 1", [.key("")], names: "%K with an empty key", at: 0)
        expectRefusal("%K == 1", [.key("has space")], names: "%K with the invalid key", at: 0)
        expectRefusal("%K == 1", [.key("1abc")], names: "%K with the invalid key", at: 0)
    }

    @Test("lexical errors")
    func lexical() {
        expectRefusal("x == 'abc", names: "unterminated string", at: 5)
        expectRefusal("x == \"abc\\\"", names: "unterminated string", at: 5)
        expectRefusal("x == 'abc\\", names: "unterminated string", at: 5)
        expectRefusal(#"x == 'a\qb'"#, names: #"unknown escape '\q'"#, at: 7)
        expectRefusal(#"x == '\u12'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal(#"x == '\uD800'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal(#"x == '\uDC00'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal(#"x == '\u{110000}'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal(#"x == '\u{D800}'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal(#"x == '\u{}'"#, names: #"invalid \u escape"#, at: 6)
        expectRefusal("x == 99999999999999999999", names: "out of the Int64 range", at: 5)
        expectRefusal("x == -9223372036854775809", names: "out of the Int64 range", at: 5)
        expectRefusal("x == 1e999", names: "not a finite double", at: 5)
        expectRefusal("x == 5abc", names: "malformed number", at: 5)
        expectRefusal("x == 1e", names: "malformed number", at: 5)
        expectRefusal("x == 1 & y == 2", names: "a single '&'", at: 7)
        expectRefusal("x == 1 | y == 2", names: "a single '|'", at: 7)
        expectRefusal("x == 'a' # c", names: "unexpected character '#'", at: 9)
        expectRefusal("café == 1", names: "unexpected character", at: 3)
        expectRefusal("'é' == x AND ü", names: "unexpected character", at: 13)
    }

    @Test("structure: empty, trailing garbage, unbalanced, truncated")
    func structure() {
        expectRefusal("", names: "empty predicate", at: 0)
        expectRefusal("  \n ", names: "empty predicate", at: 0)
        expectRefusal("x == 1 y", names: "unexpected 'y' after a complete predicate", at: 7)
        expectRefusal("x == 1 'a'", names: "unexpected a string after", at: 7)
        expectRefusal("x == 1)", names: "unbalanced ')'", at: 6)
        expectRefusal("(x == 1", names: "where ')' was expected", at: 7)
        expectRefusal("x > 5 AND", names: "unexpected end of the predicate", at: 9)
        expectRefusal("x", names: "where a comparison operator was expected", at: 1)
        expectRefusal("x y 1", names: "unexpected 'y' where a comparison operator", at: 2)
        expectRefusal("x ==", names: "unexpected end", at: 4)
        expectRefusal("()", names: "unexpected ')' where a key or a value", at: 1)
        expectRefusal("NOT", names: "unexpected end", at: 3)
    }

    @Test("nesting is bounded, without recursion trouble")
    func nesting() throws {
        let limit = PredicateSyntaxParser.maximumDepth
        let ok = String(repeating: "(", count: limit) + "x == 1" + String(repeating: ")", count: limit)
        #expect(try PredicateParser.parse(ok).filters == [f(x, .equals, .int64(1))])
        let tooDeep = String(repeating: "(", count: limit + 1) + "x == 1" + String(repeating: ")", count: limit + 1)
        expectRefusal(tooDeep, names: "nesting deeper than 64", at: limit)
        expectRefusal(String(repeating: "(", count: 10_000), names: "nesting deeper", at: limit)
        expectRefusal(String(repeating: "NOT ", count: 10_000) + "x == 1", names: "nesting deeper", at: limit * 4)
        expectRefusal(String(repeating: "!(", count: 10_000), names: "nesting deeper", at: limit)
        let long = Array(repeating: "x == 1", count: 5_000).joined(separator: " AND ")
        #expect(try PredicateParser.parse(long).filters.count == 5_000)
    }
}
