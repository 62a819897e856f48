import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusTools
import Foundation
import Testing

@Suite("Audit export and verify")
struct AuditTests {
    static let secret = "s3cr3t-plaintext-that-must-not-leak"

    /// A world whose log has multi-event commits (a cascade), a zone deletion and an
    /// encrypted value.
    static func populated() async throws -> ToolWorld {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("TodoList", "home", in: zone, ["title": .string("Home, sweet \"home\"")])])
        try await world.save((0..<3).map {
            Record.make("TodoItem", "task\($0)", in: zone, ["list": ref("home", in: zone, .deleteSelf)])
        })
        var diary = Record.make("Diary", "diary", in: zone)
        diary[encrypted: "entry"] = .string(secret)
        try await world.save([diary])
        try await world.delete([RecordID(recordName: "home", zoneID: zone)])
        let scratch = try await world.makeZone("Scratch")
        try await world.save([Record.make("Note", "n", in: scratch)])
        try await world.deleteZone(scratch)
        return world
    }

    static func export(_ world: ToolWorld, _ format: AuditFormat, filter: LogFilter = LogFilter()) throws -> String {
        let path = world.scratch("export-\(UUID().uuidString).\(format.rawValue)")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try AuditExporter.export(world.store, format: format, filter: filter, to: LineWriter(handle))
        try handle.close()
        return path
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    static func write(_ lines: [String], to path: String) throws {
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// A fresh export of `world` in `format`, changed by `change` (given the lines and
    /// the index of the first event line); returns its path.
    static func tampered(
        _ world: ToolWorld, _ format: AuditFormat, _ change: (inout [String], _ first: Int) throws -> Void
    ) throws -> String {
        let path = try export(world, format)
        var lines = try Self.lines(path)
        try change(&lines, format == .csv ? 2 : 1)
        try write(lines, to: path)
        return path
    }

    @Test("an export round-trips through audit verify, against the log and standalone", arguments: AuditFormat.allCases)
    func exportRoundTrips(format: AuditFormat) async throws {
        let world = try await Self.populated()
        let path = try Self.export(world, format)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains(Self.secret))
        let events = try world.store.range(from: 1).reduce(0) { $0 + $1.events.count }
        let header = format == .csv ? 2 : 1
        #expect(try Self.lines(path).count == events + header)
        let report = try AuditVerifier.verify(path: path, against: world.store)
        #expect(report.isValid, "\(report)")
        #expect(report.linesChecked == events)
        #expect(try AuditVerifier.verify(path: path, against: nil).isValid)
    }

    @Test("a filtered export verifies, and a line removed from it is still caught")
    func filteredExportVerifies() async throws {
        let world = try await Self.populated()
        let path = try Self.export(world, .jsonl, filter: LogFilter(scope: ScopeMatcher(zone: "Lists"), recordType: "TodoItem"))
        #expect(try AuditVerifier.verify(path: path, against: world.store).isValid)
        var lines = try Self.lines(path)
        #expect(lines.count == 7)  // header, 3 saves, 3 cascaded deletes
        lines.remove(at: 2)
        try Self.write(lines, to: path)
        let report = try AuditVerifier.verify(path: path, against: world.store)
        #expect(report.badLine == 3)
        #expect(report.problem?.contains("missing") == true)
    }

    @Test("editing one field of one line is caught and named", arguments: AuditFormat.allCases)
    func editedFieldIsCaught(format: AuditFormat) async throws {
        let world = try await Self.populated()
        let path = try Self.export(world, format)
        var lines = try Self.lines(path)
        let target = lines.firstIndex { $0.contains("task1") && $0.contains("recordSaved") }!
        lines[target] = lines[target].replacingOccurrences(of: "task1", with: "taskX")
        try Self.write(lines, to: path)
        let report = try AuditVerifier.verify(path: path, against: world.store)
        #expect(report.badLine == target + 1)
        #expect(report.problem == "recordID is 'taskX', the log says 'task1'")
    }

    @Test("an edited hash is caught standalone too")
    func editedHashIsCaughtStandalone() async throws {
        let world = try await Self.populated()
        let path = try Self.export(world, .jsonl)
        var lines = try Self.lines(path)
        let hash = try #require(try world.store.chainHash(at: 3))
        let hex = hash.map { String(format: "%02x", $0) }.joined()
        let target = try #require(lines.firstIndex { $0.contains("\"previousHash\":\"\(hex)\"") })
        lines[target] = lines[target].replacingOccurrences(of: "\"previousHash\":\"\(hex)\"", with: "\"previousHash\":\"\(String(repeating: "ab", count: 32))\"")
        try Self.write(lines, to: path)
        let standalone = try AuditVerifier.verify(path: path, against: nil)
        #expect(standalone.badLine == target + 1)
        #expect(standalone.problem?.contains("chain is broken") == true)
        #expect(try AuditVerifier.verify(path: path, against: world.store).badLine == target + 1)
    }

    @Test("deleting a line is caught and named", arguments: AuditFormat.allCases)
    func deletedLineIsCaught(format: AuditFormat) async throws {
        let world = try await Self.populated()
        let first = format == .csv ? 2 : 1
        // A single-event commit in the middle.
        let path = try Self.tampered(world, format) { lines, first in lines.remove(at: first + 2) }
        let report = try AuditVerifier.verify(path: path, against: world.store)
        #expect(report.badLine == first + 3)
        #expect(report.problem?.contains("missing") == true)
        let standalone = try AuditVerifier.verify(path: path, against: nil)
        #expect(standalone.badLine == first + 3)
        #expect(standalone.problem?.contains("missing") == true)

        // The last line of all.
        let total = try Self.lines(try Self.export(world, format)).count
        let truncated = try Self.tampered(world, format) { lines, _ in lines.removeLast() }
        #expect(try AuditVerifier.verify(path: truncated, against: world.store).badLine == total)
        #expect(try AuditVerifier.verify(path: truncated, against: nil).badLine == total)
    }

    @Test("reordering two lines is caught and named", arguments: AuditFormat.allCases)
    func reorderedLinesAreCaught(format: AuditFormat) async throws {
        let world = try await Self.populated()
        let first = format == .csv ? 2 : 1
        // Two single-event commits (zone save, list save).
        let path = try Self.tampered(world, format) { lines, first in lines.swapAt(first, first + 1) }
        var report = try AuditVerifier.verify(path: path, against: world.store)
        #expect(report.badLine == first + 1)
        #expect(report.problem?.contains("out of order") == true)
        #expect(try AuditVerifier.verify(path: path, against: nil).problem?.contains("out of order") == true)

        // Two events of one commit (a cascade).
        let cascade = try #require(try Self.lines(try Self.export(world, format)).firstIndex { $0.contains("cascade:home") })
        let swapped = try Self.tampered(world, format) { lines, _ in lines.swapAt(cascade, cascade + 1) }
        report = try AuditVerifier.verify(path: swapped, against: world.store)
        #expect(report.badLine == cascade + 1)
        #expect(report.problem?.contains("out of order") == true)
        #expect(try AuditVerifier.verify(path: swapped, against: nil).badLine == cascade + 1)
    }

    @Test("a malformed file or one from another log is refused with a clear message")
    func malformedFilesAreRefused() async throws {
        let world = try await Self.populated()
        let garbage = world.scratch("garbage.jsonl")
        try Self.write(["hello", "world"], to: garbage)
        #expect(cumulusError { _ = try AuditVerifier.verify(path: garbage, against: world.store) }?.code == .invalidArguments)
        let empty = world.scratch("empty.jsonl")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        #expect(cumulusError { _ = try AuditVerifier.verify(path: empty, against: nil) }?.code == .invalidArguments)
        #expect(cumulusError { _ = try AuditVerifier.verify(path: world.scratch("missing"), against: nil) }?.code == .invalidArguments)

        let path = try Self.export(world, .jsonl)
        var lines = try Self.lines(path)
        lines[2] = "{\"sequence\": 2"
        try Self.write(lines, to: path)
        let error = cumulusError { _ = try AuditVerifier.verify(path: path, against: nil) }
        #expect(error?.code == .invalidArguments)
        #expect(error?.message.contains("line 3") == true)

        let other = try ToolWorld("other")
        try await other.makeZone()
        let foreign = try Self.export(world, .csv)
        let report = try AuditVerifier.verify(path: foreign, against: other.store)
        #expect(report.badLine == 1)
    }

    @Test("CSV fields are quoted as RFC 4180 says and read back")
    func csvQuoting() throws {
        let fields = ["plain", "a,b", "say \"hi\"", "two\nlines", ""]
        let row = CSV.row(fields)
        #expect(row == "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",")
        #expect(try CSV.parse(row) == fields)
        #expect(try CSV.parse("\"open") == nil)
        #expect(cumulusError { _ = try CSV.parse("\"closed\"x") }?.code == .invalidArguments)
    }
}
