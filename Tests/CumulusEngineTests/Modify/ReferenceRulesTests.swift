import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Reference rules")
struct ReferenceRulesTests {
    @Test("750 deleteSelf references to one target are accepted; the 751st is limitExceeded")
    func deleteSelfLimit() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Owner", "owner", in: zone)])
        for batch in 0..<2 {
            let records = (0..<375).map {
                Record.make("Child", "c\(batch)-\($0)", in: zone, ["owner": ref("owner", in: zone, .deleteSelf)])
            }
            try await world.save(records)
        }
        let extra = Record.make("Child", "one-too-many", in: zone, ["owner": ref("owner", in: zone, .deleteSelf)])
        let result = try await world.db.modify(saving: [extra], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .limitExceeded)
        // A reference with another action is still fine, and re-saving an owned child is too.
        let plain = Record.make("Child", "plain", in: zone, ["owner": ref("owner", in: zone)])
        try await world.save([plain])
        var resave = try world.fetch(id("c0-0", in: zone))
        resave["note"] = .string("edited")
        try await world.save([resave], policy: .changedKeys)
        // At the limit, a child letting go frees a place for another in the same
        // operation; taking the place back once it is gone is refused.
        var released = try world.fetch(id("c0-1", in: zone))
        released["owner"] = ref("owner", in: zone)
        let replacement = Record.make("Child", "replacement", in: zone, ["owner": ref("owner", in: zone, .deleteSelf)])
        try await world.save([released, replacement])
        var regained = try world.fetch(id("c0-1", in: zone))
        regained["owner"] = ref("owner", in: zone, .deleteSelf)
        let swap = try await world.db.modify(
            saving: [regained, Record.make("Child", "late", in: zone)], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(failure(swap.saveResults[0].result)?.code == .limitExceeded)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([extra.recordID, plain.recordID, replacement.recordID]) == [false, true, true])
        }
    }

    @Test("a parent must exist or be saved in the same operation, with action none")
    func parentRules() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var orphan = Record.make("Task", "orphan", in: zone)
        orphan.parent = Reference(recordID: id("missing", in: zone))
        var result = try await world.db.modify(saving: [orphan], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .invalidArguments)

        var child = Record.make("Task", "child", in: zone)
        child.parent = Reference(recordID: id("project", in: zone))
        result = try await world.db.modify(saving: [child, Record.make("Project", "project", in: zone)], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(result.partialFailure == nil)

        var owning = Record.make("Task", "owning", in: zone)
        owning.parent = Reference(recordID: id("project", in: zone), action: .deleteSelf)
        result = try await world.db.modify(saving: [owning], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .invalidArguments)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([orphan.recordID, child.recordID, id("project", in: zone), owning.recordID]) == [false, true, true, false])
            #expect(try world.fetch(child.recordID).parent?.recordID == id("project", in: zone))
        }
    }

    @Test("a reference to another zone is refused")
    func crossZoneRefused() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let other = try await world.makeZone("Other")
        let record = Record.make("Item", "x", in: zone, ["elsewhere": ref("y", in: other)])
        let result = try await world.db.modify(saving: [record], savePolicy: .allKeys, as: EngineWorld.user)
        let error = failure(result.saveResults[0].result)
        #expect(error?.code == .invalidArguments)
        #expect(error?.field == "elsewhere")
        #expect(try world.exists([record.recordID]) == [false])
    }

    @Test("a validating reference needs its target, and keeps it from being deleted")
    func validatingReferences() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let dangling = Record.make("Invoice", "inv0", in: zone, ["customer": ref("nobody", in: zone, .validate)])
        var result = try await world.db.modify(saving: [dangling], savePolicy: .allKeys, as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .referenceViolation)

        try await world.save([
            Record.make("Invoice", "inv1", in: zone, ["customer": ref("acme", in: zone, .validate)]),
            Record.make("Customer", "acme", in: zone),
        ])
        result = try await world.delete([id("acme", in: zone)])
        #expect(failure(result.deleteResults[0].result)?.code == .referenceViolation)
        #expect(try world.exists([id("acme", in: zone)]) == [true])
        // Deleting the holder and the target together is allowed.
        result = try await world.delete([id("inv1", in: zone), id("acme", in: zone)])
        #expect(result.partialFailure == nil)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([id("acme", in: zone), id("inv1", in: zone)]) == [false, false])
        }
    }

    @Test("saving a child that refers to a target bumps the target's change tag, as its own event")
    func targetTagBump() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let list = try await world.save([Record.make("TodoList", "list", in: zone)])[0]
        let child = try await world.save([Record.make("TodoItem", "item", in: zone, ["list": ref("list", in: zone, .deleteSelf)])])[0]
        let bumped = try world.fetch(list.recordID)
        #expect(bumped.recordChangeTag != list.recordChangeTag)
        #expect(bumped.recordChangeTag == child.recordChangeTag)
        let bumps = try world.allEvents().compactMap { event -> (RecordID, RecordID)? in
            if case .changeTagBumped(_, let target, _, let source) = event { return (target, source) }
            return nil
        }
        #expect(bumps.count == 1)
        #expect(bumps.first?.0 == list.recordID && bumps.first?.1 == child.recordID)
        // Removing the reference bumps it again; an unrelated edit does not.
        var edited = try world.fetch(child.recordID)
        edited["title"] = .string("milk")
        try await world.save([edited], policy: .changedKeys)
        #expect(try world.fetch(list.recordID).recordChangeTag == bumped.recordChangeTag)
        edited = try world.fetch(child.recordID)
        edited["list"] = nil
        let unlinked = try await world.save([edited], policy: .changedKeys)[0]
        #expect(try world.fetch(list.recordID).recordChangeTag == unlinked.recordChangeTag)
        // A client holding the list's old tag now gets a conflict it can resolve.
        var stale = list
        stale["title"] = .string("renamed")
        let result = try await world.db.modify(saving: [stale], as: EngineWorld.user)
        #expect(failure(result.saveResults[0].result)?.code == .serverRecordChanged)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.fetch(list.recordID).recordChangeTag == unlinked.recordChangeTag)
        }
    }

    @Test("targets are written before the records that refer to them, whatever the order given")
    func targetsFirst() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("C", "c", in: zone, ["b": ref("b", in: zone, .validate)]),
            Record.make("B", "b", in: zone, ["a": ref("a", in: zone, .validate)]),
            Record.make("A", "a", in: zone),
        ])
        let order = try world.allEvents().compactMap { event -> String? in
            if case .recordSaved(_, let record, _) = event { return record.recordID.recordName }
            return nil
        }
        #expect(order == ["a", "b", "c"])
    }
}
