import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusTools
import Foundation
import Testing

@Suite("Record history")
struct RecordHistoryTests {
    @Test("history after a cascade names the record whose deletion caused it")
    func historyAfterCascadeNamesItsCause() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("TodoList", "groceries", in: zone, ["title": .string("Groceries")])])
        try await world.save([
            Record.make("TodoItem", "milk", in: zone, ["title": .string("milk"), "list": ref("groceries", in: zone, .deleteSelf)])
        ])
        var item = try #require(try world.current(RecordID(recordName: "milk", zoneID: zone)))
        item["title"] = .string("oat milk")
        try await world.save([item])
        try await world.delete([RecordID(recordName: "groceries", zoneID: zone)])

        let location = try ScopeMatcher().locate("milk", in: world.store)
        #expect(location == world.location("milk", in: zone))
        let history = try RecordHistory.load(location, in: world.store)
        #expect(history.versions.map(\.kind) == [
            .created, .updated, .deleted(.cascade(owner: RecordID(recordName: "groceries", zoneID: zone))),
        ])
        #expect(history.versions.last?.kind.description == "deleted (cascade from groceries)")
        let rename = try #require(history.versions.dropFirst().first)
        #expect(rename.changes == [FieldChange(key: "title", old: .string("milk"), new: .string("oat milk"), isEncrypted: false)])
        #expect(rename.changedKeys == ["title"])
        #expect(rename.user == ToolWorld.user)
        #expect(rename.tagBefore != rename.tagAfter)
        #expect(history.state == nil)
    }

    @Test("a reference coming to a record bumps its change tag, and history shows who caused it")
    func tagBumpsAppearWithTheirSource() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("TodoList", "work", in: zone)])
        try await world.save([Record.make("TodoItem", "report", in: zone, ["list": ref("work", in: zone)])])
        let history = try RecordHistory.load(world.location("work", in: zone), in: world.store)
        #expect(history.versions.map(\.kind) == [.created, .tagBumped(source: "report")])
        let bump = try #require(history.versions.last)
        #expect(bump.changes.isEmpty)
        #expect(bump.tagAfter == (try world.current(RecordID(recordName: "work", zoneID: zone)))?.recordChangeTag)
    }

    @Test("history of a record in a deleted zone ends with the zone's deletion")
    func zoneDeletionEndsTheHistory() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone("Scratch")
        try await world.save([Record.make("Note", "n1", in: zone, ["body": .string("hello")])])
        try await world.deleteZone(zone)
        let history = try RecordHistory.load(world.location("n1", in: zone), in: world.store)
        #expect(history.versions.map(\.kind) == [.created, .zoneDeleted])
        #expect(history.versions.last?.changes.map(\.key) == ["body"])
    }

    @Test("an unknown record is unknownItem; a name in two zones asks for the zone")
    func lookupErrors() async throws {
        let world = try ToolWorld()
        let a = try await world.makeZone("A")
        let b = try await world.makeZone("B")
        try await world.save([Record.make("Note", "same", in: a)])
        try await world.save([Record.make("Note", "same", in: b)])
        #expect(cumulusError { _ = try ScopeMatcher().locate("nothing", in: world.store) }?.code == .unknownItem)
        #expect(cumulusError { _ = try ScopeMatcher().locate("same", in: world.store) }?.code == .invalidArguments)
        #expect(try ScopeMatcher(zone: "B").locate("same", in: world.store).recordID.zoneID == b)
        #expect(try ScopeMatcher(database: "private", zone: "A").locate("same", in: world.store).recordID.zoneID == a)
        #expect(cumulusError { _ = try ScopeMatcher(database: "public").locate("same", in: world.store) }?.code == .unknownItem)
    }

    @Test("a log written before the index gets it when opened writable; read-only it says how to get it")
    func indexIsBackfilledForOlderLogs() throws {
        let temporary = TemporaryDirectory("tools-backfill")
        defer { temporary.remove() }
        let path = temporary.path
        let zone = ZoneID(zoneName: "Z", ownerName: "_u")
        let database = DatabaseID(container: "iCloud.x", scope: .private, owner: "_u")
        var expected: [HistoryEntry] = []
        do {
            let store = try LogStore(environment: LMDBEnvironment(path: path))
            let (_, outcome) = try store.appendWrite(catchUp: LogStore.withoutViews) { txn -> ((), AppendSession.Outcome) in
                var session = try store.beginAppend(in: txn)
                for index in 0..<5 {
                    var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: zone))
                    record["i"] = .int64(Int64(index))
                    let request = CommitRequest(
                        actor: "_u", requestID: "r\(index)",
                        events: [.recordSaved(database: database, record: record, changedKeys: ["i"])])
                    _ = try session.append(request, now: .now(), in: txn)
                }
                return ((), try session.finish(in: txn))
            }
            store.didCommit(outcome)
            expected = try store.recordHistory(database, RecordID(recordName: "n", zoneID: zone))
            #expect(expected.map(\.sequence) == [1, 2, 3, 4, 5])
            // Make it look like a log from before the index.
            let table = try store.environment.table("recordHistory")
            let meta = try store.environment.table("viewsState")
            try store.environment.write { txn in
                try txn.clear(table)
                _ = try txn.delete(meta, key: Array("historyIndex".utf8))
            }
        }
        do {
            var options = LMDBEnvironment.Options()
            options.readOnly = true
            let store = try LogStore(environment: LMDBEnvironment(path: path, options: options))
            #expect(try !store.hasRecordHistory())
            let error = cumulusError { _ = try store.recordHistory(database, RecordID(recordName: "n", zoneID: zone)) }
            #expect(error?.code == .invalidArguments)
            #expect(error?.message.contains("cumulus rebuild") == true)
        }
        do {
            let store = try LogStore(environment: LMDBEnvironment(path: path))
            #expect(try store.hasRecordHistory())
            #expect(try store.recordHistory(database, RecordID(recordName: "n", zoneID: zone)) == expected)
        }
    }
}
