import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation
import MallocInterposerSwift

/// Counts the heap allocations of the read paths, per request and per result row:
/// a page of a query and a lookup by ID, each written as CloudKit JSON from the
/// stored records inside the read, as the server writes its answers. `make bench`
/// runs it after `cumulus-bench`.
///
/// Counting needs `libMallocInterposerSwift.so` preloaded, so malloc and free are
/// its own (ordo-one/malloc-interposer); started without it, the tool starts itself
/// again with `LD_PRELOAD` naming the copy beside it. A separate executable for that
/// reason: linking the interposer into `cumulus-bench` would put its bookkeeping into
/// every timed figure.
///
/// A row's allocations are the difference between a page of 100 and a page of 10,
/// over the 90 rows between them: what each further record costs, with what every
/// request pays once (the read transaction, the plan, the writer's buffer) left out.
/// The target is none, amortized growth of the answer's buffer aside.
@main
struct AllocationCount {
    static let zone = ZoneID(zoneName: "Allocations", ownerName: "_allocations")
    static let user = "_allocations"
    static let lists = 20
    static let itemsPerList = 100
    static let repeats = 200

    static func main() async throws {
        guard interposerActive() else { try restartPreloaded() }
        let directory = "/tmp/cumulus-allocations-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = try Container(path: directory)
        defer { container.close() }
        let db = container.database(DatabaseID(container: "iCloud.com.example.allocations", scope: .private, owner: user))
        _ = try await db.saveZones([zone], as: user)
        try await fill(db)

        print("== allocations per read (malloc-interposer), \(repeats) repeats of each, after one untimed ==")
        print("data: \(lists) lists × \(itemsPerList) items (title, notes, dueDate, priority, done, list → REFERENCE, position)")
        var missed: [String] = []
        let reads: [(label: String, run: (Int) throws -> Int)] = [
            ("query: one list's items by position", { limit in try query(db, limit: limit) }),
            ("lookup: records by ID", { count in try lookup(db, count: count) }),
        ]
        for read in reads {
            let few = try count(rows: 10, read.run)
            let many = try count(rows: 100, read.run)
            let perRow = (many - few) / 90
            print(
                "\(read.label.padding(toLength: 40, withPad: " ", startingAt: 0)) page of 10: \(format(few)) allocations, "
                    + "page of 100: \(format(many)); per row \(format(perRow))    target 0 per row "
                    + (perRow < 0.5 ? "(met)" : "(MISSED)"))
            if perRow >= 0.5 { missed.append(read.label) }
        }
        print(missed.isEmpty ? "every target met" : "MISSED: " + missed.joined(separator: ", "))
        if ProcessInfo.processInfo.environment["CUMULUS_ALLOCATIONS_TRACE"] != nil {
            for read in reads { try trace(read.label) { _ = try read.run(100) } }
        }
    }

    // MARK: Tracing: where each allocation of one read comes from

    nonisolated(unsafe) static let traces = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 4096 * 16)
    nonisolated(unsafe) static var traceCount = 0
    nonisolated(unsafe) static var tracing = false

    /// Writes the call stack of every allocation one run of `body` makes to standard
    /// error, symbolized by glibc (`CUMULUS_ALLOCATIONS_TRACE=1`; pipe through
    /// `swift demangle`): what a per-row figure above zero is made of.
    static func trace(_ label: String, _ body: () throws -> Void) throws {
        var warm: [UnsafeMutableRawPointer?] = Array(repeating: nil, count: 16)
        _ = warm.withUnsafeMutableBufferPointer { cBacktrace($0.baseAddress!, 16) }  // loads the unwinder, which allocates, before counting
        try body()
        traceCount = 0
        MallocInterposerSwift.setAllocationHook { _ in
            guard !AllocationCount.tracing, AllocationCount.traceCount < 4096 else { return }
            AllocationCount.tracing = true
            _ = cBacktrace(AllocationCount.traces + AllocationCount.traceCount * 16, 16)
            AllocationCount.traceCount += 1
            AllocationCount.tracing = false
        }
        MallocInterposerSwift.hook()
        try body()
        MallocInterposerSwift.unhook()
        MallocInterposerSwift.setAllocationHook(nil)
        FileHandle.standardError.write(Data("== \(label): \(traceCount) allocations\n".utf8))
        for index in 0..<traceCount {
            FileHandle.standardError.write(Data("-- allocation \(index)\n".utf8))
            cBacktraceSymbols(traces + index * 16, 16, 2)
        }
    }

    /// The allocations of one request reading `rows` records, averaged over the repeats.
    static func count(rows: Int, _ run: (Int) throws -> Int) throws -> Double {
        guard try run(rows) == rows else { throw Failure("a read of \(rows) records returned another count") }
        MallocInterposerSwift.hook()
        for _ in 0..<repeats { _ = try run(rows) }
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        MallocInterposerSwift.reset()
        return Double(statistics.mallocCount) / Double(repeats)
    }

    /// One list's first `limit` items by position, written as JSON; returns the count.
    static func query(_ db: Database, limit: Int) throws -> Int {
        let list = Reference(recordID: RecordID(recordName: "list-7", zoneID: zone))
        let query = Query(
            recordType: "TodoItem", filters: [QueryFilter(key: .field("list"), comparator: .equals, value: .reference(list))],
            sort: [QuerySort(key: .field("position"))])
        var json = JSONWriter(capacity: 128 << 10)
        var rows = 0
        json.beginArray()
        _ = try db.query(query, in: zone, resultsLimit: limit, as: user) { page in
            for record in page.records {
                try RecordJSONWriter.write(stored: record, .init(), into: &json)
                rows += 1
            }
        }
        json.endArray()
        return rows
    }

    static let lookupIDs = (0..<100).map { RecordID(recordName: "item-\($0 % lists)-\($0)", zoneID: zone) }

    /// The first `count` of `lookupIDs`, written as JSON; returns the count found.
    static func lookup(_ db: Database, count: Int) throws -> Int {
        var json = JSONWriter(capacity: 128 << 10)
        var rows = 0
        json.beginArray()
        try db.fetch(Array(lookupIDs.prefix(count)), as: user) { _, item in
            try RecordJSONWriter.write(stored: try item.get(), .init(), into: &json)
            rows += 1
        }
        json.endArray()
        return rows
    }

    static func fill(_ db: Database) async throws {
        var batch: [Record] = []
        for list in 0..<lists {
            for position in 0..<itemsPerList {
                var record = Record(recordType: "TodoItem", recordID: RecordID(recordName: "item-\(list)-\(position)", zoneID: zone))
                record["title"] = .string("Buy milk and call the plumber about the kitchen sink")
                record["notes"] = .string("Before Friday: the sink drips, the tap needs a washer. Café receipts in the drawer.")
                record["dueDate"] = .timestamp(Timestamp(millisecondsSince1970: 1_760_000_000_000 + Int64(position) * 60_000))
                record["priority"] = .int64(Int64(position % 3))
                record["done"] = .int64(0)
                record["list"] = .reference(Reference(recordID: RecordID(recordName: "list-\(list)", zoneID: zone)))
                record["position"] = .int64(Int64(position))
                batch.append(record)
            }
            let result = try await db.modify(saving: batch, savePolicy: .allKeys, as: user)
            if let (id, error) = result.itemErrors.first { throw Failure("saving \(id.recordName): \(error)") }
            batch.removeAll()
        }
    }

    /// Whether malloc is the interposer's: a counted allocation shows in its statistics.
    static func interposerActive() -> Bool {
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        // The runtime's allocation (swift_slowAlloc, then malloc), which no optimizer
        // drops as it may a malloc and free of its own.
        let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
        MallocInterposerSwift.unhook()
        probe.deallocate()
        let statistics = MallocInterposerSwift.getStatistics()
        let counted = statistics.mallocCount > 0
        MallocInterposerSwift.reset()
        return counted
    }

    /// Starts this program again with the interposer preloaded (it sits beside the
    /// executable in SwiftPM's build folder), and exits with its status.
    static func restartPreloaded() throws -> Never {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let library = executable.deletingLastPathComponent().appendingPathComponent("libMallocInterposerSwift.so").path
        guard FileManager.default.fileExists(atPath: library), ProcessInfo.processInfo.environment["LD_PRELOAD"] == nil else {
            throw Failure("malloc is not the interposer's, and \(library) cannot be preloaded")
        }
        setenv("LD_PRELOAD", library, 1)
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv(executable.path, arguments)
        throw Failure("execv \(executable.path): \(String(cString: strerror(errno)))")
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

// glibc's <execinfo.h>, which the Glibc module does not carry.
@_silgen_name("backtrace")
private func cBacktrace(_ buffer: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ size: Int32) -> Int32
@_silgen_name("backtrace_symbols_fd")
private func cBacktraceSymbols(_ buffer: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ size: Int32, _ fd: Int32)
