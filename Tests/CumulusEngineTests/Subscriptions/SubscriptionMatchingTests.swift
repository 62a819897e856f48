import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

@Suite("Subscriptions: matching")
struct SubscriptionMatchingTests {
    @Test("query subscriptions: creation, update and deletion transitions, judged before and after the change")
    func transitions() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(
            querySubscription("hot", "Todo", [greater("priority", 3)], zone: zone),
            querySubscription("created", "Todo", [greater("priority", 3)], firesOn: .creation),
            querySubscription("deleted", "Todo", [greater("priority", 3)], firesOn: .deletion))
        try await world.save([Record.make("Todo", "a", in: zone, ["priority": .int64(5)])])  // created, matches
        try await world.save([Record.make("Todo", "b", in: zone, ["priority": .int64(1)])])  // created, no match
        try await world.save([Record.make("Note", "n", in: zone, ["priority": .int64(9)])])  // other type
        try await world.save([Record.make("Todo", "a", in: zone, ["priority": .int64(6)])])  // updated, matches
        try await world.save([Record.make("Todo", "a", in: zone, ["priority": .int64(1)])])  // updated, no longer matches
        try await world.save([Record.make("Todo", "b", in: zone, ["priority": .int64(8)])])  // updated into a match
        try await world.delete([id("a", in: zone)])  // did not match before deletion
        try await world.delete([id("b", in: zone)])  // matched before deletion
        try world.checkLiveAndRebuilt {
            let firings = try world.firings()
            #expect(
                firings == [
                    "created recordCreated a", "hot recordCreated a",
                    "hot recordUpdated a",
                    "hot recordUpdated b",
                    "deleted recordDeleted b", "hot recordDeleted b",
                ])
            let notifications = try world.allNotifications()
            #expect(notifications.map(\.sequence) == Array(1...UInt64(notifications.count)))
            #expect(notifications.allSatisfy { $0.zoneID == zone && $0.database == world.db.id })
        }
    }

    @Test("a cascade notifies a deletion subscription once for every cascaded record that matched")
    func cascadeDeletions() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("gone", "Item", firesOn: .deletion))
        let list = Record.make("List", "l", in: zone)
        let items = (0..<5).map { Record.make("Item", "i\($0)", in: zone, ["l": ref("l", in: zone, .deleteSelf)]) }
        let subItems = (0..<3).map { Record.make("Item", "s\($0)", in: zone, ["p": ref("i0", in: zone, .deleteSelf)]) }
        try await world.save([list] + items + subItems)
        #expect(try world.allNotifications().isEmpty)
        try await world.delete([id("l", in: zone)])
        try world.checkLiveAndRebuilt {
            let notifications = try world.allNotifications()
            #expect(notifications.allSatisfy { $0.reason == .recordDeleted && $0.subscriptionID == "gone" })
            #expect(Set(notifications.compactMap(\.recordID?.recordName)) == Set((0..<5).map { "i\($0)" } + (0..<3).map { "s\($0)" }))
            #expect(notifications.count == 8)
            // All from the one commit that deleted the list.
            #expect(Set(notifications.map(\.commitSequence)).count == 1)
        }
    }

    @Test("zone and database subscriptions fire once per commit, filtered by zone and record type")
    func zoneAndDatabaseSubscriptions() async throws {
        let world = try EngineWorld()
        let lists = try await world.makeZone("Lists")
        let notes = try await world.makeZone("Notes")
        try await world.subscribe(
            Subscription(subscriptionID: "lists", kind: .zone(lists, recordType: nil)),
            Subscription(subscriptionID: "lists-todo", kind: .zone(lists, recordType: "Todo")),
            Subscription(subscriptionID: "db", kind: .database(recordType: nil)),
            Subscription(subscriptionID: "db-note", kind: .database(recordType: "Note")))
        try await world.save((0..<3).map { Record.make("Todo", "t\($0)", in: lists) })
        try await world.save([Record.make("Note", "n", in: notes)])
        try await world.save([Record.make("Other", "o", in: lists)])
        try await world.delete([id("t0", in: lists), id("t1", in: lists)])
        try world.checkLiveAndRebuilt {
            let firings = try world.firings()
            #expect(
                firings == [
                    "lists recordZone Lists", "lists-todo recordZone Lists", "db database -",
                    "db database -", "db-note database -",
                    "lists recordZone Lists", "db database -",
                    "lists recordZone Lists", "lists-todo recordZone Lists", "db database -",
                ])
        }
        // A database notification's change token continues the database feed after that commit.
        let last = try #require(try world.allNotifications().last)
        try await world.save([Record.make("Note", "n2", in: notes)])
        let changes = try await world.db.fetchDatabaseChanges(
            since: world.container.databaseChangeToken(after: last), as: EngineWorld.user)
        #expect(changes.changedZones == [notes])
    }

    @Test("tag bumps do not fire query subscriptions; deleted subscriptions stop firing")
    func tagBumpsAndDeletion() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Target", "t", in: zone)])
        try await world.subscribe(querySubscription("targets", "Target"))
        try await world.save([Record.make("Source", "s", in: zone, ["r": ref("t", in: zone)])])
        #expect(try world.allNotifications().isEmpty)
        let deleted = try await world.db.deleteSubscriptions(["targets", "nope"], as: EngineWorld.user)
        #expect(throws: Never.self) { try deleted[0].result.get() }
        #expect(failure(deleted[1].result)?.code == .unknownItem)
        try await world.save([Record.make("Target", "t2", in: zone)])
        try world.checkLiveAndRebuilt {
            let notifications = try world.allNotifications()
            let subscriptions = try world.db.allSubscriptions(as: EngineWorld.user)
            #expect(notifications.isEmpty && subscriptions.isEmpty)
        }
    }

    @Test("firesOnce fires once, then the subscription is deleted through the log")
    func firesOnce() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("once", "Todo", firesOnce: true))
        // Two matching records in one commit, then another commit: one notification.
        try await world.save([Record.make("Todo", "a", in: zone), Record.make("Todo", "b", in: zone)])
        try await world.save([Record.make("Todo", "c", in: zone)])
        #expect(try world.firings() == ["once recordCreated a"])
        let deadline = ContinuousClock.now + .seconds(10)
        while try !world.db.allSubscriptions(as: EngineWorld.user).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try world.db.allSubscriptions(as: EngineWorld.user).isEmpty)
        let deletions = try world.allEvents().filter {
            if case .subscriptionDeleted(_, "once") = $0 { return true }
            return false
        }
        #expect(deletions.count == 1)
        // The reaper's commit names the job and its run, as a request's names the request.
        let reaped = try world.container.store.range(from: 1).filter { commit in
            commit.events.contains { if case .subscriptionDeleted = $0 { true } else { false } }
        }
        #expect(reaped.count == 1)
        #expect(reaped.first?.requestID.hasPrefix("fired-once-reaper/") == true, "\(reaped.map(\.requestID))")
        #expect(reaped.first?.requestID.split(separator: "/").count == 3, "job / run / deletion")
        try await world.save([Record.make("Todo", "d", in: zone)])
        try world.checkLiveAndRebuilt {
            let firings = try world.firings()
            #expect(firings == ["once recordCreated a"])
        }
    }

    @Test("subscription lag: the commit that last fired each subscription, next to the log head")
    func lag() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("todo", "Todo"), querySubscription("note", "Note"))
        let saved = try await world.db.modify(saving: [Record.make("Todo", "a", in: zone)], as: EngineWorld.user)
        _ = saved
        try await world.save([Record.make("Other", "o", in: zone)])
        let status = try world.db.subscriptionStatus(["todo", "note", "missing"], as: EngineWorld.user)
        let todo = try status[0].result.get()
        #expect(todo.lastFiredSequence.map { $0 + 1 } == todo.logHead)
        #expect(try status[1].result.get().lastFiredSequence == nil)
        #expect(failure(status[2].result)?.code == .unknownItem)
    }
}
