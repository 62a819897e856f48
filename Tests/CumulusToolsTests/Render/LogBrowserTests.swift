import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusTools
import Foundation
import Testing

@Suite("Reading the log")
struct LogBrowserTests {
    @Test("filters narrow the log by sequence, zone, record, user and type")
    func filtersNarrowTheLog() async throws {
        let world = try ToolWorld()
        let lists = try await world.makeZone("Lists")
        let notes = try await world.makeZone("Notes")
        try await world.save([Record.make("TodoItem", "a", in: lists, ["title": .string("A")])])
        try await world.save([Record.make("Note", "b", in: notes)])
        try await world.delete([RecordID(recordName: "a", zoneID: lists)])
        let entries = try LogBrowser.entries(in: world.store, filter: LogFilter())
        // Development grows its schema just in time: each new type and field is an
        // event of the commit whose save brought it, before the save.
        let schema = entries.filter { $0.operation == "schemaExtended" }
        #expect(schema.map(\.sequence) == [3, 3, 4])
        #expect(schema.map(\.recordType) == ["TodoItem", "TodoItem", "Note"])
        #expect(schema[1].changedKeys == ["title"])
        let all = entries.filter { $0.operation != "schemaExtended" }
        #expect(all.map(\.operation) == ["zoneSaved", "zoneSaved", "recordSaved", "recordSaved", "recordDeleted"])
        #expect(all[2].changedKeys == ["title"])
        #expect(all[4].cause == "direct")
        #expect(entries.allSatisfy { $0.user == ToolWorld.user })
        func sequences(_ filter: LogFilter) throws -> [UInt64] {
            try LogBrowser.entries(in: world.store, filter: filter).filter { $0.operation != "schemaExtended" }.map(\.sequence)
        }
        #expect(try sequences(LogFilter(scope: ScopeMatcher(zone: "Notes"))) == [2, 4])
        #expect(try sequences(LogFilter(recordName: "a")) == [3, 5])
        #expect(try sequences(LogFilter(recordType: "Note")) == [4])
        #expect(try LogBrowser.entries(in: world.store, filter: LogFilter(recordType: "Note")).map(\.operation) == ["schemaExtended", "recordSaved"])
        #expect(try LogBrowser.entries(in: world.store, filter: LogFilter(user: "_nobody")).isEmpty)
        #expect(try sequences(LogFilter(user: ToolWorld.user)) == all.map(\.sequence))
        #expect(try sequences(LogFilter(from: 2, through: 3)) == [2, 3])
        #expect(try LogBrowser.entries(in: world.store, filter: LogFilter(), limit: 2).count == 2)
        // Hashes chain from commit to commit.
        #expect(all[0].previousHash == [UInt8](repeating: 0, count: 32))
        #expect(zip(all, all.dropFirst()).allSatisfy { $1.previousHash == $0.commitHash })
        let text = EntryFormatter.text(all[4])
        #expect(text.hasPrefix("#5  "))
        #expect(text.contains("recordDeleted  Lists:\(ToolWorld.user)  a (TodoItem)  cause: direct"))
    }

    @Test("a path without a data directory is invalidArguments, and nothing is created there")
    func missingDataDirectoryIsRefused() throws {
        let path = TemporaryDirectory("tools-missing").path
        let error = cumulusError { _ = try DataDirectory.openLog(path) }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains(path) == true)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("times print as ISO-8601 UTC with milliseconds and parse back")
    func isoTimes() {
        #expect(ToolTime.iso(Timestamp(millisecondsSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ToolTime.iso(Timestamp(millisecondsSince1970: 1_795_317_794_123)) == "2026-11-22T03:23:14.123Z")
        #expect(ToolTime.iso(Timestamp(millisecondsSince1970: -1)) == "1969-12-31T23:59:59.999Z")
        #expect(ToolTime.iso(Timestamp(millisecondsSince1970: 951_782_400_000)) == "2000-02-29T00:00:00.000Z")
        #expect(ToolTime.parse("2026-11-22T03:23:14.123Z") == Timestamp(millisecondsSince1970: 1_795_317_794_123))
        #expect(ToolTime.parse("2026-11-22T04:23:14+01:00") == Timestamp(millisecondsSince1970: 1_795_317_794_000))
        #expect(ToolTime.parse("2026-11-22") == Timestamp(millisecondsSince1970: 1_795_305_600_000))
        #expect(ToolTime.parse("not a time") == nil)
    }
}
