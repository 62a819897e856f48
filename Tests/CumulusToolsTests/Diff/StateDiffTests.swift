import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusTools
import Testing

@Suite("Diff between two points")
struct StateDiffTests {
    @Test("diff lists exactly the records created, deleted (with causes) and changed between two points")
    func diffListsExactlyTheChanges() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("TodoList", "home", in: zone), Record.make("TodoItem", "b", in: zone, ["title": .string("old")]),
            Record.make("TodoItem", "c", in: zone), Record.make("TodoItem", "d", in: zone, ["title": .string("same")]),
        ])
        try await world.save([Record.make("TodoItem", "owned", in: zone, ["list": ref("home", in: zone, .deleteSelf)])])
        let first = world.head

        try await world.save([Record.make("TodoItem", "e", in: zone, ["title": .string("new")])])
        var b = try #require(try world.current(RecordID(recordName: "b", zoneID: zone)))
        b["title"] = .string("updated")
        b["done"] = .int64(1)
        try await world.save([b])
        try await world.delete([RecordID(recordName: "c", zoneID: zone)])
        try await world.save([Record.make("TodoItem", "transient", in: zone)])
        try await world.delete([RecordID(recordName: "transient", zoneID: zone)])
        try await world.delete([RecordID(recordName: "home", zoneID: zone)])
        let second = world.head

        let differences = try StateDiff.between(first, second, in: world.store)
        let byName = Dictionary(uniqueKeysWithValues: differences.map { ($0.location.recordID.recordName, $0) })
        #expect(Set(byName.keys) == ["b", "c", "e", "home", "owned"])
        #expect(byName["e"]?.kind == .created)
        #expect(byName["e"]?.changes == [FieldChange(key: "title", old: nil, new: .string("new"), isEncrypted: false)])
        #expect(byName["b"]?.kind == .changed)
        #expect(byName["b"]?.changes == [
            FieldChange(key: "done", old: nil, new: .int64(1), isEncrypted: false),
            FieldChange(key: "title", old: .string("old"), new: .string("updated"), isEncrypted: false),
        ])
        #expect(byName["c"]?.kind == .deleted(cause: .deleted(.direct)))
        #expect(byName["home"]?.kind == .deleted(cause: .deleted(.direct)))
        #expect(byName["owned"]?.kind == .deleted(cause: .deleted(.cascade(owner: RecordID(recordName: "home", zoneID: zone)))))

        // The same points the other way round are refused; a point equal to itself has no changes.
        #expect(cumulusError { _ = try StateDiff.between(second, first, in: world.store) }?.code == .invalidArguments)
        #expect(cumulusError { _ = try StateDiff.between(1, second + 1, in: world.store) }?.code == .invalidArguments)
        #expect(try StateDiff.between(first, first, in: world.store).isEmpty)
    }

    @Test("a zone deleted between the points deletes every record it held then")
    func zoneDeletionDeletesItsRecords() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone("Scratch")
        try await world.save([Record.make("Note", "n1", in: zone), Record.make("Note", "n2", in: zone)])
        try await world.delete([RecordID(recordName: "n2", zoneID: zone)])
        let first = world.head
        try await world.deleteZone(zone)
        let differences = try StateDiff.between(first, world.head, in: world.store)
        #expect(differences.map(\.location.recordID.recordName) == ["n1"])
        #expect(differences.first?.kind == .deleted(cause: .zoneDeleted))
    }
}
