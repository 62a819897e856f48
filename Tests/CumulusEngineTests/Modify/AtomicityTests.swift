import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Atomic and partial operations")
struct AtomicityTests {
    @Test("an atomic batch in a custom zone with one bad item leaves nothing behind")
    func atomicBatchAllOrNothing() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("T", "existing", in: zone, ["v": .int64(1)])])
        var records = (0..<5).map { Record.make("T", "new\($0)", in: zone, ["v": .int64(Int64($0))]) }
        records.append(Record.make("T", "bad", in: zone, ["v": .double(.nan)]))
        var edit = try world.fetch(id("existing", in: zone))
        edit["v"] = .int64(2)
        records.append(edit)
        let result = try await world.db.modify(
            saving: records, deleting: [id("existing2", in: zone)], atomic: true, as: EngineWorld.user)
        let codes = result.saveResults.map { failure($0.result)?.code }
        #expect(codes[5] == .invalidArguments)
        #expect(codes.enumerated().allSatisfy { $0.offset == 5 || $0.element == .batchRequestFailed })
        #expect(failure(result.deleteResults[0].result)?.code == .unknownItem)
        #expect(result.sequence == nil)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.noneExist(records.prefix(5).map(\.recordID)))
            #expect(try world.fetch(id("existing", in: zone))["v"] == .int64(1))
        }
    }

    @Test("a failure found while planning (a conflict) also fails the whole atomic batch")
    func atomicConflict() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let stored = try await world.save([Record.make("T", "a", in: zone)])[0]
        var stale = stored
        stale.recordChangeTag = "old"
        let fresh = Record.make("T", "b", in: zone)
        let result = try await world.db.modify(saving: [fresh, stale], as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .batchRequestFailed)
        #expect(failure(result.saveResults[1].result)?.code == .serverRecordChanged)
        #expect(try world.exists([fresh.recordID]) == [false])
    }

    @Test("non-atomic default-zone batch: good items succeed, bad ones fail alone, partialFailure")
    func defaultZonePartialSuccess() async throws {
        let world = try EngineWorld()
        let zone = ZoneID.default
        let good = (0..<4).map { Record.make("T", "ok\($0)", in: zone) }
        let bad = Record.make("T", "_reserved", in: zone)
        let needsMissing = Record.make("T", "dangling", in: zone, ["v": ref("absent", in: zone, .validate)])
        // The default zone is never atomic, whatever the flag says.
        let result = try await world.db.modify(saving: good + [bad, needsMissing], deleting: [id("nope", in: zone)], atomic: true, as: EngineWorld.user)
        #expect(result.partialFailure?.code == .partialFailure)
        #expect(result.itemErrors.count == 3)
        #expect(result.savedRecords.count == 4)
        #expect(failure(result.saveResults[4].result)?.code == .invalidArguments)
        #expect(failure(result.saveResults[5].result)?.code == .referenceViolation)
        #expect(failure(result.deleteResults[0].result)?.code == .unknownItem)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.allExist(good.map(\.recordID)))
        }
    }

    @Test("atomic: false in a custom zone lets items fail alone")
    func nonAtomicCustomZone() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let result = try await world.db.modify(
            saving: [Record.make("T", "fine", in: zone), Record.make("T", "bad", in: zone, ["d": .double(.infinity)])],
            atomic: false, as: EngineWorld.user)
        #expect(result.savedRecords.count == 1)
        #expect(try world.exists([id("fine", in: zone)]) == [true])
    }

    @Test("operation-level errors: too many items, a record named twice")
    func operationErrors() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let many = (0..<401).map { Record.make("T", "r\($0)", in: zone) }
        await #expect(throws: CumulusError.self) { try await world.db.modify(saving: many, as: EngineWorld.user) }
        do {
            _ = try await world.db.modify(saving: many, as: EngineWorld.user)
        } catch let error as CumulusError {
            #expect(error.code == .limitExceeded)
        }
        let twice = Record.make("T", "same", in: zone)
        do {
            _ = try await world.db.modify(saving: [twice], deleting: [twice.recordID], as: EngineWorld.user)
            Issue.record("expected invalidArguments")
        } catch let error as CumulusError {
            #expect(error.code == .invalidArguments)
        }
        let fine = try await world.db.modify(saving: Array(many.prefix(400)), as: EngineWorld.user)
        #expect(fine.savedRecords.count == 400)
    }
}
