import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusTools
import Testing

@Suite("Bisect")
struct BisectorTests {
    @Test("bisect finds the commit a test planted, whichever change it is asked for")
    func bisectFindsThePlantedCommit() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        for index in 0..<12 {
            try await world.save([Record.make("TodoItem", "t\(index)", in: zone, ["priority": .int64(Int64(index % 3))])])
        }
        try await world.save([Record.make("TodoItem", "bad", in: zone, ["priority": .int64(99)])])
        let planted = world.head
        for index in 12..<20 {
            try await world.save([Record.make("TodoItem", "t\(index)", in: zone, ["priority": .int64(1)])])
        }
        try await world.delete([RecordID(recordName: "bad", zoneID: zone)])
        let removed = world.head
        try await world.save([Record.make("TodoItem", "t99", in: zone, ["priority": .int64(2)])])

        let query = try PredicateParser.query(recordType: "TodoItem", predicate: "priority > 50")
        let found = try #require(try Bisector.search(world.store, query: query, condition: .becameNonEmpty))
        #expect(found.sequence == planted)
        #expect(found.countBefore == 0 && found.countAfter == 1)
        #expect(found.changed.map(\.recordID.recordName) == ["bad"])
        #expect(try Bisector.search(world.store, query: query, condition: .becameEmpty)?.sequence == removed)
        #expect(try Bisector.search(world.store, query: query, condition: .countChanged, after: planted)?.sequence == removed)
        // Another zone's records do not count.
        #expect(try Bisector.search(world.store, query: query, scope: ScopeMatcher(zone: "Other"), condition: .becameNonEmpty) == nil)
        // A count over all items changes with the first save.
        let all = try PredicateParser.query(recordType: "TodoItem", predicate: "TRUEPREDICATE")
        #expect(try Bisector.search(world.store, query: all, condition: .countChanged)?.sequence == 2)
    }

    @Test("a malformed predicate is invalidArguments naming its position")
    func malformedPredicateIsRefused() {
        let error = cumulusError { _ = try PredicateParser.query(recordType: "TodoItem", predicate: "priority > ") }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains("position") == true)
    }
}
