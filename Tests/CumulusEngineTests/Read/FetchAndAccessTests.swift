import CumulusTestSupport
import Foundation
import CumulusEngine
import CumulusModel
import Testing

@Suite("Fetch and access")
struct FetchAndAccessTests {
    @Test("fetch returns per ID the record or unknownItem, in order; desiredKeys limits user fields")
    func fetchByID() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let stored = try await world.save([Record.make("T", "a", in: zone, ["x": .int64(1), "y": .string("two")])])[0]
        let results = try world.db.fetch([id("missing", in: zone), stored.recordID], as: EngineWorld.user)
        #expect(failure(results[0].result)?.code == .unknownItem)
        #expect(try results[1].result.get() == stored)
        let some = try world.db.fetch(stored.recordID, desiredKeys: ["y"], as: EngineWorld.user)
        #expect(some.fields == ["y": .string("two")])
        #expect(some.recordChangeTag == stored.recordChangeTag && some.creationDate == stored.creationDate)
        let none = try world.db.fetch(stored.recordID, desiredKeys: [], as: EngineWorld.user)
        #expect(none.fields.isEmpty)
    }

    @Test("one fetch of IDs alternating between zones (one of them missing) finds each in its own zone")
    func fetchAcrossZones() async throws {
        let world = try EngineWorld()
        let first = try await world.makeZone("First")
        let second = try await world.makeZone("Second")
        try await world.save([Record.make("T", "a", in: first, ["n": .int64(1)])])
        try await world.save([Record.make("T", "a", in: second, ["n": .int64(2)]), Record.make("T", "b", in: second)])
        let absent = ZoneID(zoneName: "Absent", ownerName: EngineWorld.user)
        let asked = [id("a", in: first), id("a", in: second), id("b", in: first), id("b", in: second), id("a", in: absent), id("a", in: first)]
        let results = try world.db.fetch(asked, as: EngineWorld.user)
        #expect(results.map(\.recordID) == asked)
        #expect(try results[0].result.get()["n"] == .int64(1))
        #expect(try results[1].result.get()["n"] == .int64(2))
        #expect(failure(results[2].result)?.code == .unknownItem)
        #expect(try results[3].result.get().recordID.zoneID == second)
        #expect(failure(results[4].result) != nil)
        #expect(try results[5].result.get()["n"] == .int64(1))
    }

    @Test("IDs over many leaf pages, in key order, reversed and shuffled with missing ones between, each find their own record")
    func fetchThroughOneCursor() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        // Enough records, with enough bytes each, that the lookups cross leaf pages.
        let names = (0..<1_500).map { String(format: "item-%04d", $0) }
        for chunk in stride(from: 0, to: names.count, by: 400) {
            try await world.save(names[chunk..<min(chunk + 400, names.count)].map {
                Record.make("T", $0, in: zone, ["name": .string($0), "pad": .string(String(repeating: "x", count: 300))])
            })
        }
        var random = SystemRandomNumberGenerator()
        let missing = (0..<200).map { "absent-\($0)" }
        for asked in [names, names.reversed(), (names + missing).shuffled(using: &random)] {
            let results = try world.db.fetch(asked.map { id($0, in: zone) }, as: EngineWorld.user)
            #expect(results.count == asked.count)
            for (name, result) in zip(asked, results) {
                if name.hasPrefix("absent") {
                    #expect(failure(result.result)?.code == .unknownItem, "\(name)")
                } else {
                    #expect(try result.result.get()["name"] == .string(name))
                }
            }
        }
    }

    @Test("desiredKeys keeps exactly the named fields and encrypted values, in fetch and in zone changes alike")
    func desiredKeysWithEncryptedValues() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var record = Record.make(
            "T", "a", in: zone,
            ["x": .int64(1), "y": .string("two"), "list": .list([.string("p"), .string("q")]),
             "ref": .reference(Reference(recordID: RecordID(recordName: "b", zoneID: zone)))])
        record[encrypted: "secret"] = .string("s")
        record[encrypted: "other"] = .bytes([1, 2])
        let stored = try await world.save([record])[0]
        for keys in [["y", "secret"], ["list", "ref", "other", "absent"], [], ["x", "y", "list", "ref", "secret", "other"]] {
            var expected = stored
            expected.setStored(
                fields: stored.fields.filter { keys.contains($0.key) },
                encryptedValues: stored.encryptedValues.filter { keys.contains($0.key) })
            expected.clearChangedKeys()
            let fetched = try world.db.fetch(stored.recordID, desiredKeys: keys, as: EngineWorld.user)
            #expect(fetched == expected, "fetch, desiredKeys \(keys)")
            let changes = try await world.db.fetchZoneChanges(zone, desiredKeys: keys, as: EngineWorld.user)
            #expect(changes.changed == [expected], "changes, desiredKeys \(keys)")
        }
    }

    @Test("the private database is its owner's alone; without a token nothing but public reads")
    func privateAccess() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("T", "secret", in: zone)])
        func code(_ body: () async throws -> Void) async -> CumulusError.Code? {
            do { try await body(); return nil } catch let error as CumulusError { return error.code } catch { return .internalError }
        }
        #expect(await code { _ = try world.db.fetch([id("secret", in: zone)], as: EngineWorld.otherUser) } == .permissionFailure)
        #expect(await code { _ = try world.db.fetch([id("secret", in: zone)], as: nil) } == .notAuthenticated)
        #expect(await code { _ = try await world.db.modify(saving: [Record.make("T", "x", in: zone)], as: EngineWorld.otherUser) } == .permissionFailure)
        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        #expect(await code { _ = try await publicDB.modify(saving: [Record.make("T", "x", in: .default)], as: nil) } == .notAuthenticated)
    }

    @Test("public database: anyone reads, signed-in users create, only the creator changes or deletes")
    func publicAccess() async throws {
        let world = try EngineWorld()
        let publicDB = world.container.publicDatabase(container: EngineWorld.containerID)
        let post = Record.make("Post", "hello", in: .default, ["text": .string("hi")])
        let saved = try await publicDB.modify(saving: [post], as: EngineWorld.user).saveResults[0].result.get()
        #expect(try publicDB.fetch(post.recordID, as: nil)["text"] == .string("hi"))
        var edit = saved
        edit["text"] = .string("defaced")
        let attempt = try await publicDB.modify(saving: [edit], as: EngineWorld.otherUser)
        #expect(failure(attempt.saveResults[0].result)?.code == .permissionFailure)
        let delete = try await publicDB.modify(deleting: [post.recordID], as: EngineWorld.otherUser)
        #expect(failure(delete.deleteResults[0].result)?.code == .permissionFailure)
        let own = try await publicDB.modify(saving: [edit], as: EngineWorld.user)
        #expect(own.partialFailure == nil)
        var secret = Record.make("Post", "enc", in: .default)
        secret[encrypted: "pin"] = .string("1234")
        let refused = try await publicDB.modify(saving: [secret], as: EngineWorld.user)
        #expect(failure(refused.saveResults[0].result)?.code == .invalidArguments)
    }

    @Test("the same record ID may exist in two databases")
    func databasesAreSeparate() async throws {
        let world = try EngineWorld()
        let other = world.container.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.otherUser)
        _ = try await world.db.modify(saving: [Record.make("T", "same", in: .default, ["who": .string("alice")])], as: EngineWorld.user)
        _ = try await other.modify(saving: [Record.make("T", "same", in: .default, ["who": .string("bob")])], as: EngineWorld.otherUser)
        #expect(try world.db.fetch(RecordID(recordName: "same"), as: EngineWorld.user)["who"] == .string("alice"))
        #expect(try other.fetch(RecordID(recordName: "same"), as: EngineWorld.otherUser)["who"] == .string("bob"))
    }
}
