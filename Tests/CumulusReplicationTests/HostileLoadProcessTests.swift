import CumulusTestSupport
import Foundation
import Testing

/// A `cumulus serve` process under hostile load over real sockets: what it holds in
/// memory stays bounded, and a well-behaved client is answered meanwhile. It lives
/// beside the other process tests, whose helpers (``Cluster``, ``NodeProcess``) it uses.
@Suite("Hostile load on a served process")
struct HostileLoadProcessTests {
    /// `VmRSS` of process `pid`, in bytes.
    static func residentBytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line?.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1_024 }
    }

    @Test("150 connections each announcing a 4 MB body: memory grows by less than the 100 MiB body budget, the rest are TRY_AGAIN_LATER, and another client is served")
    func bodiesAreBudgeted() async throws {
        let cluster = try Cluster()
        let node = try await cluster.startLeader(
            "leader", extra: ["--max-body-buffer-bytes", String(100 << 20), "--request-body-timeout", "10"])
        let pid = try #require(node.processID)
        let before = try #require(Self.residentBytes(pid))
        let path = "/database/1/\(Cluster.containerName)/development/private/records/modify"
            + "?ckAPIToken=\(cluster.apiToken)&ckWebAuthToken=\(cluster.webToken)"
        // Each sends the head and 1 MiB of its body, then stalls: before the budget,
        // the server held every connection's bytes (150 MiB here, 4 GiB at the
        // default connection limit).
        let megabyte = [UInt8](repeating: 0x20, count: 1 << 20)
        var hostile: [RawConnection] = []
        for _ in 0..<150 {
            let connection = try RawConnection(port: node.port)
            connection.send("POST \(path) HTTP/1.1\r\nHost: cumulus\r\nContent-Length: 4000000\r\n\r\n")
            connection.sendWithoutWaiting(megabyte)
            hostile.append(connection)
        }
        defer { hostile.forEach { $0.close() } }
        // Measured while every connection is open and has sent what it will (a slow
        // server reading less by then can only make this smaller).
        try await Task.sleep(for: .seconds(2))
        let during = try #require(Self.residentBytes(pid))
        #expect(during - before < 96 << 20, "resident \(before >> 20) → \(during >> 20) MiB")
        // The refused answer at once; the admitted ones wait for bodies that never come.
        let refused = await withTaskGroup(of: Bool.self) { group in
            for connection in hostile { group.addTask { await connection.statusLine()?.contains(" 503 ") == true } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(refused >= 150 - 26, "100 MiB holds 26 bodies of 4 MB; the others are refused")
        // A well-behaved client is served while the admitted ones still hang.
        let answer = try await TestHTTP.request(cluster.privateURL(node, "zones/list"))
        #expect(answer.status == 200)
        let metrics = try await TestHTTP.request(node.url + "/metrics", headers: TestHTTP.operatorHeaders)
        #expect(String(decoding: metrics.body, as: UTF8.self).contains(#"cumulus_limit_hits_total{limit="body_buffer"} "#))
    }

    @Test("the API's limits are serve options: --max-items-per-request 3 refuses 4 lookups, --max-query-scan 400 refuses a zone-wide scan of 401")
    func apiLimitsAreOptions() async throws {
        let cluster = try Cluster()
        let node = try await cluster.startLeader(
            "leader", extra: ["--max-items-per-request", "3", "--max-query-scan", "400"])
        func lookup(_ count: Int) async throws -> TestHTTP.Answer {
            try await TestHTTP.request(
                cluster.privateURL(node, "records/lookup"), method: .POST,
                body: ["records": (0..<count).map { ["recordName": "r\($0)"] }])
        }
        #expect(try await lookup(3).status == 200)
        let refused = try await lookup(4)
        #expect(refused.json["serverErrorCode"] as? String == "LIMIT_EXCEEDED", "\(refused.text)")
        #expect(refused.text.contains("the limit is 3"), "\(refused.text)")
        // 401 records, three per request.
        for start in stride(from: 0, to: 401, by: 3) {
            let operations: [[String: Any]] = (start..<min(start + 3, 401)).map {
                ["operationType": "forceReplace",
                 "record": ["recordName": "item-\($0)", "recordType": "Item", "fields": ["n": ["value": $0]]]]
            }
            let saved = try await TestHTTP.request(
                cluster.privateURL(node, "records/modify"), method: .POST, body: ["operations": operations])
            #expect(saved.status == 200, "\(saved.text)")
        }
        // A second zone: a zone-wide query then has no one index that orders it.
        let zone = try await TestHTTP.request(
            cluster.privateURL(node, "zones/modify"), method: .POST,
            body: ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "other"]]]]])
        #expect(zone.status == 200, "\(zone.text)")
        let query: [String: Any] = ["zoneWide": true, "query": ["recordType": "Item", "sortBy": [["fieldName": "n"]]]]
        let scan = try await TestHTTP.request(cluster.privateURL(node, "records/query"), method: .POST, body: query)
        #expect(scan.json["serverErrorCode"] as? String == "LIMIT_EXCEEDED", "\(scan.text)")
        #expect(scan.text.contains("400 records"), "\(scan.text)")
    }

    @Test("every kind of hostile load at once: trickled heads, stalled bodies, held streams, bodies that parse into millions of values; memory stays within the body budget and another client is answered throughout")
    func combinedLoad() async throws {
        let budget = 160 << 20
        let cluster = try Cluster()
        let node = try await cluster.startLeader(
            "leader", extra: ["--max-body-buffer-bytes", String(budget), "--request-body-timeout", "20"])
        let pid = try #require(node.processID)
        let before = try #require(Self.residentBytes(pid))
        let load = HostileLoad(
            port: node.port, base: "/database/1/\(Cluster.containerName)/development",
            credentials: "ckAPIToken=\(cluster.apiToken)&ckWebAuthToken=\(cluster.webToken)")
        defer { load.close() }
        try load.trickleHeads(100)
        // 32 MB of the budget.
        try load.stallBodies(8)
        // For one user: four are held, two refused.
        try load.holdStreams(6)
        // Eight complete amplifying bodies: their values built whole, each would hold about 85 MB
        // (measured before the parser kept to its reservation).
        let parsers = try (0..<8).map { _ in try load.amplifyingModify() }
        defer { parsers.forEach { $0.close() } }
        let sending = parsers.map { connection in Task { await connection.sendAll(HostileLoad.amplifyingBody) } }
        // A well-behaved client, answered while all of it is under way.
        var peak = before
        for _ in 0..<5 {
            let answer = try await TestHTTP.request(cluster.privateURL(node, "zones/list"))
            #expect(answer.status == 200)
            peak = max(peak, Self.residentBytes(pid) ?? 0)
        }
        for task in sending { _ = await task.value }
        // Each parsing request is refused: by the parser, past what its body may take
        // (LIMIT_EXCEEDED), or by the budget while others parse (TRY_AGAIN_LATER).
        var refusedByParser = 0
        for connection in parsers {
            let answer = await connection.untilClosed() ?? ""
            peak = max(peak, Self.residentBytes(pid) ?? 0)
            #expect(answer.contains("LIMIT_EXCEEDED") || answer.contains("TRY_AGAIN_LATER"), "\(answer.prefix(300))")
            if answer.contains("LIMIT_EXCEEDED") && answer.contains("in memory once parsed") { refusedByParser += 1 }
        }
        #expect(refusedByParser >= 1)
        // Within the budget, plus the body's copies on its way in and the runtime's slack.
        #expect(peak - before < budget + (64 << 20), "resident \(before >> 20) → peak \(peak >> 20) MiB")
        let answer = try await TestHTTP.request(cluster.privateURL(node, "zones/list"))
        #expect(answer.status == 200)
    }
}
