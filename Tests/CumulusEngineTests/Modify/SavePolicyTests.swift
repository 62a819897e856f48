import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Save policies")
struct SavePolicyTests {
    /// A zone with one record {title, count, note}; returns it as stored.
    func seeded(_ world: EngineWorld) async throws -> (ZoneID, Record) {
        let zone = try await world.makeZone()
        let stored = try await world.save([
            Record.make("Note", "n", in: zone, ["title": .string("A"), "count": .int64(1), "note": .string("keep")]),
        ])[0]
        return (zone, stored)
    }

    @Test("ifServerRecordUnchanged: a matching tag saves; a stale one returns serverRecordChanged with the server's record")
    func ifServerRecordUnchanged() async throws {
        let world = try EngineWorld()
        let (_, stored) = try await seeded(world)
        var mine = stored
        mine["title"] = .string("B")
        let first = try await world.db.modify(saving: [mine], as: EngineWorld.user)
        let saved = try first.saveResults[0].result.get()
        #expect(saved["title"] == .string("B"))
        #expect(saved.recordChangeTag != stored.recordChangeTag)
        #expect(saved.modificationDate != nil && saved.creationDate == stored.creationDate)

        var stale = stored
        stale["title"] = .string("C")
        let second = try await world.db.modify(saving: [stale], as: EngineWorld.user)
        let error = failure(second.saveResults[0].result)
        #expect(error?.code == .serverRecordChanged)
        #expect(error?.serverRecord?["title"] == .string("B"))
        #expect(error?.serverRecord?.recordChangeTag == saved.recordChangeTag)
        #expect(second.partialFailure?.code == .partialFailure)

        // A new record (no tag) whose name is taken conflicts too.
        let twin = Record.make("Note", "n", in: stored.recordID.zoneID, ["title": .string("twin")])
        let third = try await world.db.modify(saving: [twin], as: EngineWorld.user)
        #expect(failure(third.saveResults[0].result)?.code == .serverRecordChanged)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.fetch(stored.recordID)["title"] == .string("B"))
        }
    }

    @Test("changedKeys: no tag check, only the changed keys are written")
    func changedKeys() async throws {
        let world = try EngineWorld()
        let (_, stored) = try await seeded(world)
        var other = stored
        other["note"] = .string("theirs")
        try await world.save([other], policy: .changedKeys)
        var shell = try Record(systemFieldsArchive: stored.encodeSystemFields())  // stale tag, no fields
        shell["count"] = .int64(5)
        shell["title"] = nil
        try await world.save([shell], policy: .changedKeys)
        try world.checkLiveAndRebuilt { () throws in
            let now = try world.fetch(stored.recordID)
            #expect(now["count"] == .int64(5))
            #expect(now["title"] == nil)
            #expect(now["note"] == .string("theirs"))
        }
    }

    @Test("allKeys: no tag check, every field held is written, fields not held are kept")
    func allKeys() async throws {
        let world = try EngineWorld()
        let (_, stored) = try await seeded(world)
        var partial = Record.make("Note", "n", in: stored.recordID.zoneID, ["title": .string("Z")])
        partial.recordChangeTag = "stale"
        try await world.save([partial], policy: .allKeys)
        try world.checkLiveAndRebuilt { () throws in
            let now = try world.fetch(stored.recordID)
            #expect(now["title"] == .string("Z"))
            #expect(now["count"] == .int64(1) && now["note"] == .string("keep"))
        }
    }

    @Test("HTTP modes: create, update, replace, forceUpdate, forceReplace and checked delete")
    func httpModes() async throws {
        let world = try EngineWorld()
        let (zone, stored) = try await seeded(world)
        func run(_ save: RecordSave) async throws -> Result<Record, CumulusError> {
            try await world.db.modify(ModifyOperation(saves: [save]), as: EngineWorld.user).saveResults[0].result
        }
        // create: refuses a taken name.
        #expect(failure(try await run(RecordSave(Record.make("Note", "n", in: zone), mode: .create)))?.code == .serverRecordChanged)
        // update: tag checked, only the given fields change.
        var update = Record.make("Note", "n", in: zone, ["count": .int64(2)])
        update.recordChangeTag = stored.recordChangeTag
        let updated = try await run(RecordSave(update, mode: .update)).get()
        #expect(updated["title"] == .string("A") && updated["count"] == .int64(2))
        #expect(failure(try await run(RecordSave(update, mode: .update)))?.code == .serverRecordChanged)
        // update of a missing record is unknownItem; forceUpdate creates it.
        var missing = Record.make("Note", "ghost", in: zone, ["title": .string("boo")])
        missing.recordChangeTag = "x"
        #expect(failure(try await run(RecordSave(missing, mode: .update)))?.code == .unknownItem)
        #expect(try await run(RecordSave(missing, mode: .forceUpdate)).get()["title"] == .string("boo"))
        // replace: unlisted fields become null.
        var replace = Record.make("Note", "n", in: zone, ["title": .string("only")])
        replace.recordChangeTag = updated.recordChangeTag
        let replaced = try await run(RecordSave(replace, mode: .replace)).get()
        #expect(replaced.fields == ["title": .string("only")])
        // forceReplace ignores the tag.
        let forced = try await run(RecordSave(Record.make("Note", "n", in: zone, ["count": .int64(9)]), mode: .forceReplace)).get()
        #expect(forced.fields == ["count": .int64(9)])
        // Checked delete: a stale tag conflicts, the current one deletes.
        var result = try await world.db.modify(ModifyOperation(deletes: [RecordDelete(stored.recordID, mode: .ifTagMatches("stale"))]), as: EngineWorld.user)
        #expect(failure(result.deleteResults[0].result)?.code == .serverRecordChanged)
        result = try await world.db.modify(ModifyOperation(deletes: [RecordDelete(stored.recordID, mode: .ifTagMatches(forced.recordChangeTag ?? ""))]), as: EngineWorld.user)
        #expect(result.partialFailure == nil)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([stored.recordID, id("ghost", in: zone)]) == [false, true])
        }
    }

    @Test("system fields are the server's: creator, dates and tag ignore what the client sends")
    func systemFieldsAreServerSet() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var forged = Record.make("Note", "f", in: zone, ["title": .string("x")])
        forged.creationDate = Timestamp(millisecondsSince1970: 1)
        forged.creatorUserRecordID = RecordID(recordName: "_mallory")
        forged.recordChangeTag = nil
        let saved = try await world.save([forged], policy: .ifServerRecordUnchanged)[0]
        #expect(saved.creatorUserRecordID?.recordName == EngineWorld.user)
        #expect(saved.lastModifiedUserRecordID?.recordName == EngineWorld.user)
        #expect(saved.creationDate != Timestamp(millisecondsSince1970: 1))
        #expect(saved.recordChangeTag != nil)
        #expect(try world.fetch(forged.recordID) == saved)
    }

    @Test("deleting a record that does not exist is unknownItem; saving into a missing zone is zoneNotFound")
    func missingThings() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let result = try await world.delete([id("nothing", in: zone)])
        #expect(failure(result.deleteResults[0].result)?.code == .unknownItem)
        let nowhere = ZoneID(zoneName: "Nowhere", ownerName: EngineWorld.user)
        let save = try await world.db.modify(saving: [Record.make("T", "t", in: nowhere)], as: EngineWorld.user)
        #expect(failure(save.saveResults[0].result)?.code == .zoneNotFound)
    }
}
