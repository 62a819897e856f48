import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusViews
import Testing

/// Reads check a record's values as they decode them (not all of them up front); a
/// stored record whose value bytes were damaged behind the engine's back must then
/// give an error wherever its values are used, never pass as a record without them.
@Suite("Damaged stored values")
struct DamagedValuesTests {
    /// Saves notes `a`…`e` and replaces the first byte of `c`'s title text with 0xFF
    /// (invalid UTF-8) in the records view, leaving its header intact.
    private func damagedWorld() async throws -> (EngineWorld, ZoneID) {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save(["a", "b", "c", "d", "e"].map {
            Record.make("Note", $0, in: zone, ["title": .string("zebra \($0)"), "n": .int64(1)])
        })
        let views = world.container.views
        let key = ViewKeys.record(FeedKeys.zone(world.db.id, zone), "c")
        try world.container.store.environment.write { txn in
            guard var bytes = try txn.get(views.tables.records, key: key) else { return }
            let text = Array("zebra c".utf8)
            guard let at = (0...(bytes.count - text.count)).first(where: { Array(bytes[$0..<$0 + text.count]) == text }) else {
                return
            }
            bytes[at] = 0xFF
            try txn.put(views.tables.records, key: key, value: bytes)
        }
        return (world, zone)
    }

    @Test("a fetch returns the record; its values report the damage as internalError, never as missing fields")
    func fetchReportsDamage() async throws {
        let (world, zone) = try await damagedWorld()
        let record = try world.fetch(id("c", in: zone))
        #expect(record.recordType == "Note" && record.recordID.recordName == "c")
        let error = try #require(record.storedValuesError())
        #expect(error.code == .internalError && error.message.contains("c"))
        // The healthy neighbours read as ever.
        #expect(try world.fetch(id("b", in: zone)).storedValuesError() == nil)
        #expect(try world.fetch(id("b", in: zone))["title"] == .string("zebra b"))
    }

    @Test("a query whose filter reads the damaged value fails with internalError instead of dropping the record")
    func queryFilterReportsDamage() async throws {
        let (world, zone) = try await damagedWorld()
        let query = Query(recordType: "Note", filters: [
            QueryFilter(key: QueryKey(name: "title"), comparator: .beginsWith, value: .string("zebra")),
        ])
        let error = #expect(throws: CumulusError.self) { try world.db.query(query, in: zone, as: EngineWorld.user) }
        #expect(error?.code == .internalError)
    }

    @Test("saving a fetched damaged record back, changed or not, is refused and the stored bytes stay as they were")
    func damagedRecordIsNeverWrittenBack() async throws {
        let (world, zone) = try await damagedWorld()
        let views = world.container.views
        let key = ViewKeys.record(FeedKeys.zone(world.db.id, zone), "c")
        let before = try world.container.store.environment.read { try $0.get(views.tables.records, key: key) }
        let last = try world.container.store.lastSequence()
        let fetched = try world.fetch(id("c", in: zone))
        var changed = fetched
        changed["n"] = .int64(2)
        for (label, record) in [("unchanged", fetched), ("changed", changed)] {
            for mode in [SaveMode.allKeys, .changedKeys] {
                // Refused either for the item or for the whole operation; never saved.
                var refused = false
                do {
                    let result = try await world.db.modify(
                        ModifyOperation(saves: [RecordSave(record, mode: mode)]), as: EngineWorld.user)
                    if case .failure = result.saveResults[0].result { refused = true }
                } catch is CumulusError {
                    refused = true
                }
                #expect(refused, "\(label), \(mode)")
            }
        }
        let after = try world.container.store.environment.read { try $0.get(views.tables.records, key: key) }
        #expect(after == before)
        #expect(try world.container.store.lastSequence() == last, "nothing was committed")
    }
}
