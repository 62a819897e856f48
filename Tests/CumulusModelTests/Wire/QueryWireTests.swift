import Foundation
import Testing
@testable import CumulusModel

@Suite("Queries on the wire")
struct QueryWireTests {
    /// A filter of each comparator with a value that comparator takes.
    static func sampleFilter(_ comparator: QueryComparator) -> QueryFilter {
        let strings = FieldValue.list([.string("a"), .string("b")])
        switch comparator {
        case .near:
            return QueryFilter(key: .field("place"), comparator: .near, value: .location(Location(latitude: 1, longitude: 2)), distance: 1500)
        case .containsAllTokens, .containsAnyTokens:
            return QueryFilter(key: .allTokens, comparator: comparator, value: .string("big red"))
        case .in, .notIn:
            return QueryFilter(key: .recordName, comparator: comparator, value: .list([.reference(Reference(recordID: RecordID(recordName: "r")))]))
        case .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll:
            return QueryFilter(key: .field("tags"), comparator: comparator, value: strings)
        case .listContains, .notListContains:
            return QueryFilter(key: .field("tags"), comparator: comparator, value: .string("a"))
        case .beginsWith, .notBeginsWith, .listMemberBeginsWith, .notListMemberBeginsWith:
            return QueryFilter(key: .field("name"), comparator: comparator, value: .string("Jo"))
        case .equals, .notEquals:
            return QueryFilter(key: .creatorUserRecordID, comparator: comparator, value: .reference(Reference(recordID: RecordID(recordName: "_u"))))
        case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            return QueryFilter(key: .creationDate, comparator: comparator, value: .timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_000)))
        }
    }

    @Test("all 21 comparators round-trip", arguments: QueryComparator.allCases)
    func comparatorRoundTrip(_ comparator: QueryComparator) throws {
        let filter = Self.sampleFilter(comparator)
        let json = try throughBytes(filter.wireJSON)
        #expect(json["comparator"] == .string(comparator.rawValue))
        #expect(try QueryFilter(wire: json) == filter)
    }

    @Test("there are 21 comparators")
    func comparatorCount() {
        #expect(QueryComparator.allCases.count == 21)
    }

    @Test("system keys are written as ___ names and read in both spellings")
    func systemKeys() throws {
        let expected: [(QueryKey, String)] = [
            (.recordName, "___recordId"), (.creationDate, "___createTime"), (.modificationDate, "___modTime"),
            (.creatorUserRecordID, "___createdBy"), (.lastModifiedUserRecordID, "___modifiedBy"),
            (.parent, "___parent"), (.share, "___share"),
        ]
        for (key, name) in expected {
            let filter = QueryFilter(key: key, comparator: .equals, value: .int64(1))
            #expect(filter.wireJSON["systemFieldName"] == .string(name))
            #expect(filter.wireJSON["fieldName"] == nil)
            #expect(try QueryFilter(wire: filter.wireJSON) == filter)
        }
        #expect(QueryFilter(key: .field("title"), comparator: .equals, value: .int64(1)).wireJSON["fieldName"] == "title")
        #expect(QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("a")).wireJSON["fieldName"] == "allTokens")
        let long = try QueryFilter(wire: ["comparator": "LESS_THAN", "systemFieldName": "createdTimestamp", "fieldValue": ["value": 5, "type": "TIMESTAMP"]])
        #expect(long.key == .creationDate)
    }

    @Test("Apple's sample query")
    func appleSample() throws {
        let json = try JSONValue.parse(Data(#"""
            {"recordType": "Items",
             "filterBy": [{"systemFieldName": "createdUserRecordName", "comparator": "EQUALS",
                           "fieldValue": {"value": {"recordName": "recordA"}, "type": "REFERENCE"}}],
             "sortBy": [{"systemFieldName": "createdTimestamp", "ascending": false}]}
            """#.utf8))
        let zone = ZoneID(zoneName: "Z")
        let query = try Query(wire: json, defaultZone: zone)
        #expect(
            query
                == Query(
                    recordType: "Items",
                    filters: [
                        QueryFilter(
                            key: .creatorUserRecordID, comparator: .equals,
                            value: .reference(Reference(recordID: RecordID(recordName: "recordA", zoneID: zone))))
                    ],
                    sort: [QuerySort(key: .creationDate, ascending: false)]))
    }

    @Test("sorts: default ascending, relativeLocation in both shapes")
    func sorts() throws {
        let here = Location(latitude: 10, longitude: 20)
        let sort = QuerySort(key: .field("place"), ascending: true, relativeLocation: here)
        #expect(try QuerySort(wire: throughBytes(sort.wireJSON)) == sort)
        #expect(try QuerySort(wire: ["fieldName": "place", "relativeLocation": ["latitude": 10, "longitude": 20]]) == sort)
        #expect(try QuerySort(wire: ["fieldName": "n"]) == QuerySort(key: .field("n")))
        #expect(try QuerySort(wire: ["systemFieldName": "___modTime", "ascending": false]) == QuerySort(key: .modificationDate, ascending: false))
    }

    @Test("queries round-trip, matchesNothing included")
    func queries() throws {
        let filters = QueryComparator.allCases.map(Self.sampleFilter)
        let query = Query(recordType: "Note", filters: filters, sort: [QuerySort(key: .creationDate, ascending: false), QuerySort(key: .field("n"))])
        #expect(try Query(wire: throughBytes(query.wireJSON)) == query)
        let nothing = Query(recordType: "Note", filters: [filters[0]], matchesNothing: true)
        #expect(try Query(wire: throughBytes(nothing.wireJSON)) == nothing)
        #expect(try Query(wire: ["recordType": "Note"]) == Query(recordType: "Note"))
        let parsed = try PredicateParser.query(recordType: "Note", predicate: "x BETWEEN {1, 2} AND NOT (tags CONTAINS 'a')")
        #expect(try Query(wire: throughBytes(parsed.wireJSON)) == parsed)
    }

    @Test("lenient filters: a scalar for IN becomes a one-element list; lower-case comparators")
    func lenientFilters() throws {
        let filter = try QueryFilter(wire: ["comparator": "in", "fieldName": "x", "fieldValue": ["value": "a"]])
        #expect(filter == QueryFilter(key: .field("x"), comparator: .in, value: .list([.string("a")])))
    }

    @Test("bad filters, sorts and queries are invalidArguments")
    func errors() {
        let value: JSONValue = ["value": 1]
        expectWireError("must be an object") { _ = try QueryFilter(wire: "x") }
        expectWireError("needs a string comparator") { _ = try QueryFilter(wire: ["fieldName": "x", "fieldValue": value]) }
        expectWireError("unknown filter comparator 'ABOUT'") { _ = try QueryFilter(wire: ["comparator": "ABOUT", "fieldName": "x", "fieldValue": value]) }
        expectWireError("fieldName (or systemFieldName) is required") { _ = try QueryFilter(wire: ["comparator": "EQUALS", "fieldValue": value]) }
        expectWireError("not both") {
            _ = try QueryFilter(wire: ["comparator": "EQUALS", "fieldName": "x", "systemFieldName": "___parent", "fieldValue": value])
        }
        expectWireError("unknown systemFieldName 'bogus'") { _ = try QueryFilter(wire: ["comparator": "EQUALS", "systemFieldName": "bogus", "fieldValue": value]) }
        expectWireError("field 'x': a EQUALS filter needs a fieldValue") { _ = try QueryFilter(wire: ["comparator": "EQUALS", "fieldName": "x"]) }
        expectWireError("NEAR needs a distance") {
            _ = try QueryFilter(wire: ["comparator": "NEAR", "fieldName": "p", "fieldValue": ["value": ["latitude": 1, "longitude": 2]]])
        }
        expectWireError("NEAR needs a LOCATION") { _ = try QueryFilter(wire: ["comparator": "NEAR", "fieldName": "p", "fieldValue": value, "distance": 5]) }
        expectWireError("non-negative") {
            _ = try QueryFilter(wire: ["comparator": "NEAR", "fieldName": "p", "fieldValue": ["value": ["latitude": 1, "longitude": 2]], "distance": -1])
        }
        expectWireError("BEGINS_WITH needs a STRING") { _ = try QueryFilter(wire: ["comparator": "BEGINS_WITH", "fieldName": "x", "fieldValue": value]) }
        expectWireError("LIST_CONTAINS needs a single value") {
            _ = try QueryFilter(wire: ["comparator": "LIST_CONTAINS", "fieldName": "x", "fieldValue": ["value": [1]]])
        }
        expectWireError("ascending must be a boolean") { _ = try QuerySort(wire: ["fieldName": "x", "ascending": "yes"]) }
        expectWireError("relativeLocation must be a LOCATION") { _ = try QuerySort(wire: ["fieldName": "x", "relativeLocation": value]) }
        expectWireError("needs a non-empty string recordType") { _ = try Query(wire: ["filterBy": []]) }
        expectWireError("filterBy must be an array") { _ = try Query(wire: ["recordType": "T", "filterBy": ["comparator": "EQUALS"]]) }
    }
}
