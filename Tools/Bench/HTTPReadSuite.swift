import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation

/// The read paths over real sockets: `records/query` pages of 10 and 100 records,
/// `records/lookup` of 1 and of 100 records, and a 200-record `changes/zone` page,
/// driven by `wrk`, each beside the ceiling of its own stack: the same server, route,
/// authentication, request logging and metrics answering the same bytes from a cache
/// (``ReadCeiling``) instead of the engine. Rounds alternate engine and ceiling;
/// each figure is the median of its rounds. `CUMULUS_BENCH_READ=<text>` runs only the
/// reads whose label contains it (to profile one: `perf record -g` around the run).
enum HTTPReadSuite: BenchSuite {
    static let name = "http-read"

    /// How long each measurement runs; `--quick` shortens them.
    struct Sizes {
        var seconds: Int
        var warmUpSeconds: Int
        var rounds: Int
        var connections: Int

        static let full = Sizes(seconds: 5, warmUpSeconds: 1, rounds: 3, connections: 16)
        static let quick = Sizes(seconds: 3, warmUpSeconds: 1, rounds: 1, connections: 16)
    }

    /// Lists, each of `itemsPerList` items, saved into the bench zone.
    static let lists = 100
    static let itemsPerList = 100

    /// One read the suite times: its route, body, and the ratio it must reach.
    struct Read {
        var label: String
        var route: String
        var body: String
        var target: Double
    }

    static var reads: [Read] {
        let zone = #"{"zoneName":"\#(HTTPSuite.zone.zoneName)"}"#
        func query(_ limit: Int) -> String {
            #"{"zoneID":\#(zone),"resultsLimit":\#(limit),"query":{"recordType":"TodoItem","#
                + #""filterBy":[{"fieldName":"list","comparator":"EQUALS","fieldValue":{"value":{"recordName":"list-7"},"type":"REFERENCE"}}],"#
                + #""sortBy":[{"fieldName":"position","ascending":true}]}}"#
        }
        func lookup(_ names: [String]) -> String {
            #"{"zoneID":\#(zone),"records":["# + names.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ",") + "]}"
        }
        return [
            Read(label: "query, one list's 10 items", route: "records/query", body: query(10), target: 0.5),
            Read(label: "query, one list's 100 items", route: "records/query", body: query(100), target: 0.5),
            Read(label: "lookup, 1 record", route: "records/lookup", body: lookup(["item-7-3"]), target: 0.7),
            Read(
                label: "lookup, 100 records", route: "records/lookup",
                body: lookup((0..<100).map { "item-\($0)-\($0 % itemsPerList)" }), target: 0.7),
            Read(
                label: "changes/zone, 200 records", route: "changes/zone",
                body: #"{"zones":[{"zoneID":\#(zone),"resultsLimit":200}]}"#, target: 0.5),
        ]
    }

    static func run(quick: Bool, report: Report) async throws {
        let sizes = quick ? Sizes.quick : Sizes.full
        let wrk = try Wrk.locate()
        report.section("http-read: record reads over loopback, beside the same stack answering from a cache")
        report.note(
            "data: \(lists) lists × \(itemsPerList) TodoItems (title, notes, dueDate, priority, done, list → REFERENCE, "
                + "position) in one zone of a user's private database, development environment; durable store")
        report.note(
            "load: \(wrk.version), \(sizes.connections) connections, 2 threads, the same POST body per request; "
                + "ceiling: the same server with CloudKitAPI.readCeiling set, which keeps each answer by route, caller "
                + "and body and hands it back (parsing, auth, logging, metrics still run); \(sizes.rounds) alternating "
                + "rounds of \(sizes.seconds) s (after \(sizes.warmUpSeconds) s untimed), median")
        if quick { report.note("--quick: \(sizes.rounds) round of \(sizes.seconds) s") }

        let store = try await HTTPBenchStore("read")
        defer { store.close() }
        try await fill(store)
        let engine = try await BenchServer.start(store)
        defer { engine.task.cancel() }
        let ceiling = try await BenchServer.start(store) { $0.readCeiling = ReadCeiling() }
        defer { ceiling.task.cancel() }

        let only = ProcessInfo.processInfo.environment["CUMULUS_BENCH_READ"]
        for read in reads where only.map({ read.label.contains($0) }) ?? true {
            func url(_ server: BenchServer) -> String {
                "http://127.0.0.1:\(server.port)/database/1/\(HTTPSuite.containerName)/development/private/\(read.route)"
                    + "?ckAPIToken=\(store.apiToken)&ckWebAuthToken=\(store.webToken)"
            }
            // Both answer the same records (the ceiling keeps the engine's first answer;
            // cursors and tokens are sealed afresh by each engine answer, so only the
            // records are compared), and the ceiling the same bytes every time.
            let answer = try await post(url(engine), read.body)
            let kept = try await post(url(ceiling), read.body)
            guard try await post(url(ceiling), read.body) == kept, try records(kept, read) == records(answer, read) else {
                throw BenchFailure("\(read.label): the ceiling's answer differs from the engine's")
            }
            try check(answer, read)
            var engineRates: [Double] = []
            var ceilingRates: [Double] = []
            var problems: [String] = []
            for _ in 0..<sizes.rounds {
                for (server, isEngine) in [(engine, true), (ceiling, false)] {
                    _ = try await wrk.run(
                        url: url(server), body: read.body, connections: sizes.connections, threads: 2,
                        seconds: sizes.warmUpSeconds)
                    let result = try await wrk.run(
                        url: url(server), body: read.body, connections: sizes.connections, threads: 2, seconds: sizes.seconds)
                    if result.non2xx != 0 { problems.append("\(result.non2xx) non-2xx") }
                    if result.socketErrors != 0 { problems.append(result.socketErrorLine) }
                    if isEngine { engineRates.append(result.rate) } else { ceilingRates.append(result.rate) }
                }
            }
            report.compare(
                read.label, Figure(median(engineRates), "req/s"), baseline: "ceiling (cached answer)",
                Figure(median(ceilingRates), "req/s"), target: .atLeast(read.target))
            report.detail("  answer", "\(Report.grouped(Int64(answer.count))) bytes")
            if !problems.isEmpty { report.detail("  WARNING", problems.joined(separator: "; ")) }
        }
        try await engine.stop()
        try await ceiling.stop()
    }

    /// Saves the lists' items in the bench zone, 400 to a modify.
    static func fill(_ store: HTTPBenchStore) async throws {
        var batch: [Record] = []
        for list in 0..<lists {
            for position in 0..<itemsPerList {
                var record = HTTPSuite.sampleRecord(name: "item-\(list)-\(position)")
                record["list"] = .reference(Reference(recordID: RecordID(recordName: "list-\(list)", zoneID: HTTPSuite.zone)))
                record["position"] = .int64(Int64(position))
                batch.append(record)
                if batch.count == 400 {
                    try await save(batch, store)
                    batch.removeAll()
                }
            }
        }
        if !batch.isEmpty { try await save(batch, store) }
    }

    private static func save(_ records: [Record], _ store: HTTPBenchStore) async throws {
        let result = try await store.db.modify(saving: records, savePolicy: .allKeys, as: store.user)
        if let (id, error) = result.itemErrors.first { throw BenchFailure("saving \(id.recordName): \(error)") }
    }

    /// The records of an answer.
    static func records(_ answer: [UInt8], _ read: Read) throws -> [JSONValue] {
        let json = try JSONValue.parse(Data(answer))
        if read.route == "changes/zone" { return json["zones"]?.arrayValue?.first?["records"]?.arrayValue ?? [] }
        return json["records"]?.arrayValue ?? []
    }

    /// The answer's records are the ones asked for: the bench times real pages.
    static func check(_ answer: [UInt8], _ read: Read) throws {
        let records = try records(answer, read)
        let expected: Int
        switch read.label {
        case let label where label.contains("10 items"): expected = 10
        case let label where label.contains("100"): expected = 100
        case let label where label.contains("200"): expected = 200
        default: expected = 1
        }
        guard records.count == expected, records.allSatisfy({ $0["fields"] != nil }) else {
            throw BenchFailure("\(read.label): \(records.count) records in the answer, expected \(expected)")
        }
    }

    /// One POST, its body (through the replication suite's client).
    static func post(_ url: String, _ body: String) async throws -> [UInt8] {
        let response = try await FailoverCluster.post(url, body, timeout: .seconds(30))
        guard response.status == 200 else { throw BenchFailure("POST \(url): \(response.status) \(response.text)") }
        return response.body
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
