import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import Testing

/// What one user's request may cost everyone else (issue 40, items 7 and 8), tried
/// through a live server's socket: the bounds on filter lists, filters, subscriptions
/// and CPU time answer `LIMIT_EXCEEDED` naming the bound, and a request within them
/// gets the same answer as before.
@Suite("Request bounds over HTTP")
struct RequestBoundsTests {
    static func live(
        configure: (inout CloudKitAPI) -> Void = { _ in },
        _ body: @escaping @Sendable (AccessLeakTests.Session) async throws -> Void
    ) async throws {
        let world = try APIWorld()
        var api = world.api
        configure(&api)
        let app = CumulusHTTPServer.application(api: api, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(AccessLeakTests.Session(world: world, client: client)) }
    }

    /// `count` public `Item` records `i0`, `i1`, … with `n` their number.
    static func seed(_ s: AccessLeakTests.Session, count: Int) async throws {
        for start in stride(from: 0, to: count, by: 200) {
            let operations = (start..<min(start + 200, count)).map {
                #"{"operationType":"create","record":{"recordName":"i\#($0)","recordType":"Item","fields":{"n":{"value":\#($0)}}}}"#
            }
            let saved = try await s.alice("records/modify", #"{"operations":[\#(operations.joined(separator: ","))]}"#)
            #expect(saved["records"]?.arrayValue?.count == operations.count)
        }
    }

    static func notIn(_ values: Range<Int>) -> String {
        let list = values.map { #"\#($0)"# }.joined(separator: ",")
        return #"{"query":{"recordType":"Item","filterBy":[{"comparator":"NOT_IN","fieldName":"n","fieldValue":{"value":[\#(list)]}}]},"resultsLimit":400}"#
    }

    @Test("an IN-like list past 1,000 values is LIMIT_EXCEEDED; 1,000 are answered exactly")
    func filterListsAreBounded() async throws {
        try await Self.live { s in
            try await Self.seed(s, count: 600)
            let refused = try await s.call("records/query", Self.notIn(0..<1_001), database: "public", token: nil)
            #expect(refused.json["serverErrorCode"] == "LIMIT_EXCEEDED", "\(refused.json)")
            #expect(refused.json["reason"]?.stringValue?.contains("at most 1000") == true, "\(refused.json)")
            // 1,000 values, 590 of them held by records: the ten others match.
            let answered = try await s.call("records/query", Self.notIn(-410..<590), database: "public", token: nil)
            let names = Set(AccessLeakTests.names(answered.json["records"]))
            #expect(names == Set((590..<600).map { "i\($0)" }), "\(answered.json)")
        }
    }

    @Test("a query subscription past 16 filters, and a user's 101st subscription, are LIMIT_EXCEEDED")
    func subscriptionsAreBounded() async throws {
        try await Self.live { s in
            let filters = (0..<17).map { #"{"comparator":"CONTAINS_ANY_TOKENS","fieldName":"title","fieldValue":{"value":"w\#($0)"}}"# }
            let tooMany = try await s.alice("subscriptions/modify", #"""
                {"operations":[{"operationType":"create","subscription":{"subscriptionID":"wide","subscriptionType":"query",
                  "query":{"recordType":"Item","filterBy":[\#(filters.joined(separator: ","))]},"firesOn":["create"]}}]}
                """#)
            #expect(tooMany["subscriptions"]?[0]?["serverErrorCode"] == "LIMIT_EXCEEDED", "\(tooMany)")
            func subscriptions(_ range: Range<Int>) -> String {
                let operations = range.map {
                    #"{"operationType":"create","subscription":{"subscriptionID":"s\#($0)","subscriptionType":"query","query":{"recordType":"Item"},"firesOn":["create"]}}"#
                }
                return #"{"operations":[\#(operations.joined(separator: ","))]}"#
            }
            let hundred = try await s.alice("subscriptions/modify", subscriptions(0..<100))
            #expect(hundred["subscriptions"]?.arrayValue?.allSatisfy { $0["serverErrorCode"] == nil } == true)
            let more = try await s.alice("subscriptions/modify", subscriptions(100..<101))
            #expect(more["subscriptions"]?[0]?["serverErrorCode"] == "LIMIT_EXCEEDED", "\(more)")
            // Replacing one held is no new subscription; another user has their own count.
            let replaced = try await s.alice("subscriptions/modify", subscriptions(0..<1))
            #expect(replaced["subscriptions"]?[0]?["serverErrorCode"] == nil, "\(replaced)")
            let bobs = try await s.bob("subscriptions/modify", subscriptions(100..<101))
            #expect(bobs["subscriptions"]?[0]?["serverErrorCode"] == nil, "\(bobs)")
        }
    }

    @Test("a query page past the per-request CPU budget is LIMIT_EXCEEDED saying so")
    func queriesHaveACPUBudget() async throws {
        try await Self.live(configure: { $0.limits.requestCPU = .nanoseconds(1) }) { s in
            // Seeded past the API: its modifies would spend the budget too.
            let db = s.world.container.publicDatabase(container: APIWorld.containerName)
            let records = (0..<400).map { Record(recordType: "Item", recordID: RecordID(recordName: "i\($0)"), fields: ["n": .int64(Int64($0))]) }
            #expect(try await db.modify(saving: records, as: s.world.alice).itemErrors.isEmpty)
            let spent = try await s.call("records/query", Self.notIn(0..<10), database: "public", token: nil)
            #expect(spent.json["serverErrorCode"] == "LIMIT_EXCEEDED", "\(spent.json)")
            #expect(spent.json["reason"]?.stringValue?.contains("CPU time") == true, "\(spent.json)")
        }
    }

    @Test("a modify whose planning passes the CPU budget is LIMIT_EXCEEDED and changes nothing")
    func planningHasACPUBudget() async throws {
        try await Self.live(configure: { $0.limits.requestCPU = .nanoseconds(1) }) { s in
            let operations = (0..<200).map {
                #"{"operationType":"create","record":{"recordName":"p\#($0)","recordType":"Item","fields":{"n":{"value":\#($0)}}}}"#
            }
            let spent = try await s.alice("records/modify", #"{"operations":[\#(operations.joined(separator: ","))]}"#)
            #expect(spent["serverErrorCode"] == "LIMIT_EXCEEDED", "\(spent)")
            let lookup = try await s.alice("records/lookup", #"{"records":[{"recordName":"p0"}]}"#)
            #expect(lookup["records"]?[0]?["serverErrorCode"] == "NOT_FOUND", "\(lookup)")
        }
    }
}
