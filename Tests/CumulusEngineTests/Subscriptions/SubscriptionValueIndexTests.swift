import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Equality-indexed subscription matching")
struct SubscriptionValueIndexTests {
    func equals(_ field: String, _ value: FieldValue) -> QueryFilter {
        QueryFilter(key: .field(field), comparator: .equals, value: value)
    }

    @Test("of 99 subscriptions on one type (one user's most is 100), only the ones watching the saved value fire; kinds and case as the evaluator sees them")
    func onlyMatchingValuesFire() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var subscriptions = (0..<97).map { querySubscription("bucket-\($0)", "T", [equals("bucket", .int64(Int64($0)))]) }
        subscriptions.append(querySubscription("named-milk", "T", [equals("name", .string("MILK"))]))
        subscriptions.append(querySubscription("plain", "T", [greater("bucket", 95)]))
        for batch in stride(from: 0, to: subscriptions.count, by: 200) {
            _ = try await world.db.saveSubscriptions(Array(subscriptions[batch..<min(batch + 200, subscriptions.count)]), as: EngineWorld.user)
        }
        try await world.save([Record.make("T", "a", in: zone, ["bucket": .int64(7)])])
        try await world.save([Record.make("T", "b", in: zone, ["bucket": .double(42), "name": .string("milk")])])
        try await world.save([Record.make("T", "c", in: zone, ["bucket": .list([.int64(96), .int64(3)])])])
        try await world.delete([id("a", in: zone)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.firings() == [
                "bucket-7 recordCreated a",
                "bucket-42 recordCreated b", "named-milk recordCreated b",
                "bucket-3 recordCreated c", "bucket-96 recordCreated c", "plain recordCreated c",
                "bucket-7 recordDeleted a",
            ])
        }
        // Replacing or deleting a subscription moves or drops its index entries.
        _ = try await world.db.saveSubscriptions([querySubscription("bucket-7", "T", [equals("bucket", .int64(8))])], as: EngineWorld.user)
        _ = try await world.db.deleteSubscriptions(["bucket-42"], as: EngineWorld.user)
        try await world.save([Record.make("T", "d", in: zone, ["bucket": .int64(7)]), Record.make("T", "e", in: zone, ["bucket": .int64(8)]),
                              Record.make("T", "f", in: zone, ["bucket": .int64(42)])])
        // d (bucket 7) no longer fires the moved "bucket-7"; f fires nothing: "bucket-42" is gone.
        #expect(try world.firings().count == 9)
        #expect(Array(try world.firings().suffix(2)) == ["bucket-7 recordCreated e", "bucket-8 recordCreated e"])
    }
}
