import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
import Testing

@testable import CumulusReplication

/// What a superseded leader handed out for commits nobody replicated (issue 16, "epoch
/// starts"), without a network: leader A's frames are handed to B by hand, A writes a
/// tail B never gets, B leads the next epoch, and C follows B.
@Suite("Tokens from a superseded leader's fork")
struct ForkTokenTests {
    static let user = ReplicationWorld.user
    static let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)

    /// Saves `names` in the zone on `container`.
    func save(_ names: [String], on container: Container) async throws {
        let records = names.map {
            Record(recordType: "Item", recordID: RecordID(recordName: $0, zoneID: Self.zone), fields: ["title": .string($0)])
        }
        let result = try await ReplicationWorld.database(container).modify(saving: records, savePolicy: .allKeys, as: Self.user)
        for save in result.saveResults { _ = try save.result.get() }
    }

    /// Hands every frame of `leader` that `follower` lacks to it.
    func replicate(_ leader: Container, to follower: Container) async throws {
        let frames = try leader.store.rawFrames(from: follower.store.head.sequence + 1, limit: 10_000, maxBytes: .max)
        _ = try await follower.writer.replicate(frames)
    }

    /// Everything a client can hold at one moment on `container`: a zone and a database
    /// change token, a notification token, and the sequence and epoch of the answer.
    struct Held {
        var zone: ChangeToken
        var database: ChangeToken
        var notifications: NotificationToken
        var sequence: UInt64
        var epoch: UInt64

        init(_ container: Container) async throws {
            let db = ReplicationWorld.database(container)
            zone = try await db.fetchZoneChanges(ForkTokenTests.zone, as: ForkTokenTests.user).token
            database = try await db.fetchDatabaseChanges(as: ForkTokenTests.user).token
            notifications = try container.notifications(for: ForkTokenTests.user, limit: 1_000).token
            sequence = container.store.head.sequence
            epoch = container.store.epoch
        }
    }

    func isExpired(_ body: () async throws -> Void) async -> Bool {
        do {
            try await body()
            return false
        } catch let error as CumulusError {
            return error.code == .changeTokenExpired
        } catch {
            return false
        }
    }

    @Test("tokens and sequences past the end of their epoch are expired on every node; those before it still serve")
    func forkedTokensExpire() async throws {
        let paths = (0..<3).map { _ in ReplicationWorld.temporaryPath() }
        defer { paths.forEach { try? FileManager.default.removeItem(atPath: $0) } }

        let leader = try Container(path: paths[0])
        defer { leader.close() }
        let db = ReplicationWorld.database(leader)
        _ = try await db.saveZones([Self.zone], as: Self.user)
        _ = try await db.saveSubscriptions(
            [Subscription(subscriptionID: "lists", kind: .zone(Self.zone, recordType: nil))], as: Self.user)
        try await save(["one", "two"], on: leader)
        let next = try ReplicationWorld.follower(of: leader, path: paths[1])
        defer { next.close() }
        try await replicate(leader, to: next)
        let shared = try await Held(leader)

        // The old leader's tail, which its follower never gets.
        try await save(["orphan"], on: leader)
        let forked = try await Held(leader)
        #expect(forked.sequence > shared.sequence)

        // The follower leads the next epoch and writes over the same feed positions;
        // a third node follows it.
        try next.lead(epoch: leader.store.epoch + 1)
        try await save(["three", "four"], on: next)
        let third = try ReplicationWorld.follower(of: next, path: paths[2])
        defer { third.close() }
        try await replicate(next, to: third)
        try third.store.adoptEpoch(next.store.epoch)

        let epochStart = try #require(try next.store.epochStarts().last).sequence
        #expect(epochStart == forked.sequence, "the new epoch begins where the orphan was")
        for node in [next, third] {
            let db = ReplicationWorld.database(node)
            #expect(await isExpired { _ = try await db.fetchZoneChanges(Self.zone, since: forked.zone, as: Self.user) })
            #expect(await isExpired { _ = try await db.fetchDatabaseChanges(since: forked.database, as: Self.user) })
            #expect(await isExpired { _ = try node.notifications(for: Self.user, since: forked.notifications) })
            #expect(await isExpired { try node.checkRequestedSequence(forked.sequence, epoch: forked.epoch) })

            // From before the fork: the new epoch's changes, none of the lost tail.
            let changes = try await db.fetchZoneChanges(Self.zone, since: shared.zone, as: Self.user)
            #expect(Set(changes.changed.map(\.recordID.recordName)) == ["three", "four"])
            let zones = try await db.fetchDatabaseChanges(since: shared.database, as: Self.user)
            #expect(zones.changedZones == [Self.zone])
            let notified = try node.notifications(for: Self.user, since: shared.notifications).notifications
            #expect(!notified.isEmpty && notified.allSatisfy { $0.commitSequence > epochStart }, "\(notified)")
            try node.checkRequestedSequence(shared.sequence, epoch: shared.epoch)
            // What the new epoch hands out is its own, and serves.
            let now = try await Held(node)
            _ = try await db.fetchZoneChanges(Self.zone, since: now.zone, as: Self.user)
            _ = try node.notifications(for: Self.user, since: now.notifications)
        }
        // The old leader itself, not yet told, still serves its own history.
        _ = try await ReplicationWorld.database(leader).fetchZoneChanges(Self.zone, since: forked.zone, as: Self.user)
    }

    @Test("a token taken inside a feed entry's changes is judged by that entry")
    func partlyConsumedEntry() async throws {
        let leaderPath = ReplicationWorld.temporaryPath()
        let nextPath = ReplicationWorld.temporaryPath()
        defer { [leaderPath, nextPath].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        let leader = try Container(path: leaderPath)
        defer { leader.close() }
        _ = try await ReplicationWorld.database(leader).saveZones([Self.zone], as: Self.user)
        let next = try ReplicationWorld.follower(of: leader, path: nextPath)
        defer { next.close() }
        try await replicate(leader, to: next)
        // One commit of three records, not replicated; a page of one record stops inside it.
        try await save(["x", "y", "z"], on: leader)
        let page = try await ReplicationWorld.database(leader).fetchZoneChanges(Self.zone, resultsLimit: 1, as: Self.user)
        #expect(page.moreComing)
        try next.lead(epoch: leader.store.epoch + 1)
        try await save(["after"], on: next)
        #expect(await isExpired {
            _ = try await ReplicationWorld.database(next).fetchZoneChanges(Self.zone, since: page.token, as: Self.user)
        })
    }
}
