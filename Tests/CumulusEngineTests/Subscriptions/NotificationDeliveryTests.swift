import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

@Suite("Subscriptions: delivery and access")
struct NotificationDeliveryTests {
    @Test("an offline subscriber fetching since its token gets every notification it missed, in order, once")
    func offlineSubscriber() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("all", "Todo"))
        for batch in 0..<5 {
            try await world.save((0..<4).map { Record.make("Todo", "r\(batch * 4 + $0)", in: zone) })
        }
        // Online for a while: read the first page, keep the token, go offline.
        let first = try world.container.notifications(for: EngineWorld.user, limit: 7)
        #expect(first.notifications.map(\.sequence) == Array(1...7))
        #expect(first.moreComing)
        // Offline: more commits (creations, updates, deletions).
        try await world.save((0..<4).map { Record.make("Todo", "r\($0)", in: zone, ["v": .int64(1)]) })
        try await world.delete(ids(["r5", "r6"], in: zone))
        // Back: page through since the token, 3 at a time.
        var seen: [SubscriptionNotification] = []
        var token = first.token
        var pages = 0
        while true {
            let page = try world.container.notifications(for: EngineWorld.user, since: token, limit: 3)
            seen += page.notifications
            token = page.token
            pages += 1
            if !page.moreComing || pages > 100 { break }
        }
        #expect(seen.map(\.sequence) == Array(8...UInt64(7 + 13 + 4 + 2)))
        #expect(seen.suffix(6).map(\.reason) == [.recordUpdated, .recordUpdated, .recordUpdated, .recordUpdated, .recordDeleted, .recordDeleted])
        #expect(seen.map(\.commitSequence) == seen.map(\.commitSequence).sorted())
        // Nothing new: an empty page at the same place.
        let again = try world.container.notifications(for: EngineWorld.user, since: token)
        #expect(again.notifications.isEmpty && !again.moreComing)
        #expect(again.token == token)
    }

    @Test("notification tokens are authenticated and tied to their user and log")
    func tokens() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("all", "Todo"))
        try await world.save([Record.make("Todo", "a", in: zone)])
        let token = try world.container.notifications(for: EngineWorld.user).token
        var forged = token.bytes
        forged[forged.count - 20] ^= 1
        #expect(throws: CumulusError.self) {
            try world.container.notifications(for: EngineWorld.user, since: NotificationToken(bytes: forged))
        }
        let other = try EngineWorld("tokens-other")
        do {
            _ = try other.container.notifications(for: EngineWorld.user, since: token)
            Issue.record("another server accepted the token")
        } catch let error as CumulusError {
            #expect(error.code == .changeTokenExpired)
        }
        do {
            _ = try world.container.notifications(for: EngineWorld.otherUser, since: token)
            Issue.record("another user's stream accepted the token")
        } catch let error as CumulusError {
            #expect(error.code == .changeTokenExpired)
        }
        // A change token is not a notification token, though both are signed alike.
        let changeToken = try await world.db.fetchDatabaseChanges(as: EngineWorld.user).token
        #expect(throws: CumulusError.self) {
            try world.container.notifications(for: EngineWorld.user, since: NotificationToken(bytes: changeToken.bytes))
        }
    }

    @Test("the live stream yields stored notifications, then wakes on a new commit")
    func liveStream() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("all", "Todo"))
        try await world.save([Record.make("Todo", "before", in: zone)])
        let stream = world.container.notificationStream(for: EngineWorld.user)
        let reader = Task { () throws -> [String] in
            var names: [String] = []
            for try await notification in stream {
                names.append(notification.recordID?.recordName ?? "")
                if names.count == 2 { break }
            }
            return names
        }
        try await Task.sleep(for: .milliseconds(50))
        try await world.save([Record.make("Todo", "after", in: zone)])
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            reader.cancel()
        }
        let names = try await reader.value
        timeout.cancel()
        #expect(names == ["before", "after"])
    }

    @Test("a stream ends when its task is cancelled")
    func streamCancellation() async throws {
        let world = try EngineWorld()
        let stream = world.container.notificationStream(for: EngineWorld.user)
        let reader = Task { () throws -> Int in
            var count = 0
            for try await _ in stream { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(20))
        reader.cancel()
        #expect(try await reader.value == 0)
    }

    @Test("no notification for a commit that did not happen: a failed atomic batch notifies nothing")
    func failedBatchNotifiesNothing() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.subscribe(querySubscription("all", "Todo"), Subscription(subscriptionID: "z", kind: .zone(zone, recordType: nil)))
        let headBefore = world.container.store.head.sequence
        let result = try await world.db.modify(
            saving: [Record.make("Todo", "good", in: zone), Record.make("Todo", "bad", in: zone, ["9bad": .int64(1)])],
            atomic: true, as: EngineWorld.user)
        #expect(result.saveResults.allSatisfy { failure($0.result) != nil })
        #expect(world.container.store.head.sequence == headBefore)
        #expect(try world.allNotifications().isEmpty)
        // A write that does happen is notified by the time the writer returns: the
        // notification was committed with it, not after it.
        try await world.save([Record.make("Todo", "good", in: zone)])
        let notifications = try world.allNotifications()
        #expect(notifications.map(\.commitSequence) == [headBefore + 1, headBefore + 1])
        #expect(notifications.allSatisfy { $0.commitSequence <= world.container.store.head.sequence })
    }

    @Test("notifications survive a reopen exactly as written: they were committed with their commits")
    func reopen() async throws {
        let copy = TemporaryDirectory("copy")
        defer { copy.remove() }
        let before: [SubscriptionNotification]
        do {
            let world = try EngineWorld()
            let zone = try await world.makeZone()
            try await world.subscribe(querySubscription("all", "Todo"))
            try await world.save([Record.make("Todo", "a", in: zone)])
            before = try world.allNotifications()
            world.container.close()
            try FileManager.default.copyItem(atPath: world.path, toPath: copy.path)
        }
        let reopened = try Container(path: copy.path)
        defer { reopened.close() }
        let after = try reopened.notifications(for: EngineWorld.user, limit: 100).notifications
        #expect(after == before)
        #expect(before.count == 1)
    }

    @Test("access: other users' private databases, and which kinds each database allows")
    func access() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        do {
            _ = try await world.db.saveSubscriptions([querySubscription("x", "Todo")], as: EngineWorld.otherUser)
            Issue.record("saved a subscription in another user's private database")
        } catch let error as CumulusError {
            #expect(error.code == .permissionFailure)
        }
        #expect(throws: CumulusError.self) { try world.db.allSubscriptions(as: EngineWorld.otherUser) }
        do {
            _ = try await world.db.saveSubscriptions([querySubscription("x", "Todo")], as: nil)
            Issue.record("saved a subscription without signing in")
        } catch let error as CumulusError {
            #expect(error.code == .notAuthenticated)
        }

        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        let publicResults = try await publicDB.saveSubscriptions(
            [
                Subscription(subscriptionID: "zone", kind: .zone(.default, recordType: nil)),
                Subscription(subscriptionID: "db", kind: .database(recordType: nil)),
                querySubscription("q", "Todo"),
            ], as: EngineWorld.user)
        #expect(failure(publicResults[0].result)?.code == .invalidArguments)
        #expect(failure(publicResults[1].result)?.code == .invalidArguments)
        #expect(try publicResults[2].result.get().owner == EngineWorld.user)
        // Another user cannot take or see the ID in the public database.
        let taken = try await publicDB.saveSubscriptions([querySubscription("q", "Note")], as: EngineWorld.otherUser)
        #expect(failure(taken[0].result)?.code == .permissionFailure)
        #expect(try publicDB.allSubscriptions(as: EngineWorld.otherUser).isEmpty)
        #expect(failure(try publicDB.fetchSubscriptions(["q"], as: EngineWorld.otherUser)[0].result)?.code == .unknownItem)
        #expect(try publicDB.fetchSubscriptions(["q"], as: EngineWorld.user)[0].result.get().subscriptionID == "q")

        let shared = world.container.sharedDatabase(container: EngineWorld.containerID, user: EngineWorld.user)
        let sharedResults = try await shared.saveSubscriptions(
            [querySubscription("q", "Todo"), Subscription(subscriptionID: "db", kind: .database(recordType: nil))],
            as: EngineWorld.user)
        #expect(failure(sharedResults[0].result)?.code == .invalidArguments)
        #expect(throws: Never.self) { try sharedResults[1].result.get() }

        let missingZone = ZoneID(zoneName: "Nope", ownerName: EngineWorld.user)
        let privateResults = try await world.db.saveSubscriptions(
            [
                Subscription(subscriptionID: "zone", kind: .zone(missingZone, recordType: nil)),
                Subscription(subscriptionID: "ok", kind: .zone(zone, recordType: "Todo")),
                Subscription(subscriptionID: "bad id\u{7}", kind: .database(recordType: nil)),
            ], as: EngineWorld.user)
        #expect(failure(privateResults[0].result)?.code == .zoneNotFound)
        #expect(try privateResults[1].result.get().owner == EngineWorld.user)
        #expect(failure(privateResults[2].result)?.code == .invalidArguments)
        #expect(try world.db.allSubscriptions(as: EngineWorld.user).map(\.subscriptionID) == ["ok"])
        // Public-database query subscriptions notify their owner.
        _ = try await publicDB.modify(saving: [Record.make("Todo", "p", in: .default)], savePolicy: .allKeys, as: EngineWorld.otherUser)
        #expect(try world.firings() == ["q recordCreated p"])
        #expect(try world.allNotifications(for: EngineWorld.otherUser).isEmpty)
    }
}
