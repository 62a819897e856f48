import CumulusModel
import CumulusServer
import CumulusTestSupport
import Foundation
import Testing

@Suite("Hostile requests")
struct FuzzTests {
    /// Valid bodies to mutate, one or more per route.
    static let corpus: [(String, String)] = [
        ("records/modify", #"{"zoneID":{"zoneName":"Lists"},"atomic":false,"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"n":{"value":1},"s":{"value":"x","type":"STRING"},"l":{"value":[1,2],"type":"INT64_LIST"},"r":{"value":{"recordName":"b","action":"DELETE_SELF"},"type":"REFERENCE"},"p":{"value":{"latitude":1.5,"longitude":2.5},"type":"LOCATION"}}}}]}"#),
        ("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"a"}},{"operationType":"update","record":{"recordName":"c","recordType":"T","recordChangeTag":"1"}}]}"#),
        ("records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"a"},{"recordName":"b","desiredKeys":["n"]}]}"#),
        ("records/query", #"{"zoneID":{"zoneName":"Lists"},"resultsLimit":5,"query":{"recordType":"T","filterBy":[{"comparator":"GREATER_THAN","fieldName":"n","fieldValue":{"value":0}},{"comparator":"CONTAINS_ALL_TOKENS","fieldName":"allTokens","fieldValue":{"value":"x y"}}],"sortBy":[{"fieldName":"n","ascending":false}]}}"#),
        ("records/changes", #"{"zoneID":{"zoneName":"Lists"},"resultsLimit":3}"#),
        ("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z1"}}},{"operationType":"delete","zone":{"zoneID":{"zoneName":"Z0"}}}]}"#),
        ("zones/lookup", #"{"zones":[{"zoneName":"Lists"}]}"#),
        ("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"},"resultsLimit":2}]}"#),
        ("changes/database", #"{"resultsLimit":2}"#),
        ("assets/upload", #"{"zoneID":{"zoneName":"Lists"},"tokens":[{"recordName":"a","recordType":"T","fieldName":"f"},{"recordType":"T","fieldName":"g"}]}"#),
        ("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"a","recordType":"T","fields":{"f":{"value":{"fileChecksum":"8f16bdcd1782a2007362bf555a5a961652f4afe7a6a9b59cc7c6865108178f56","size":19,"receipt":"AQUAAAGiHKKjcxpp"},"type":"ASSETID"}}}}]}"#),
    ]

    @Test("20,000 random and mutated JSON bodies: every answer 2xx or 4xx with a well-formed body; verify passes after")
    func hostileBodies() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
        var random = RandomRecords(seed: 0xF022)
        let pieces = ["{", "}", "[", "]", ",", ":", "\"", "null", "true", "-1", "1e999", "\"value\"", "\"type\"", "\"REFERENCE\"",
                      "\"operations\"", "\"recordName\"", "{\"a\":", "\u{0}", "😀", "\\u0000", "9223372036854775808", "[[[[[[[["]
        var statuses: [Int: Int] = [:]
        // 20,000 requests of one user as fast as they go: bodies, not rates, are what
        // this test throws at the server.
        var api = world.api
        api.limits.requestsPerUser = .unlimited
        for round in 0..<20_000 {
            // Most bodies are refused without a suspension point: give the test
            // process's other tasks (two threads on this machine) their turn.
            if round % 50 == 0 { await Task.yield() }
            let (operation, base) = Self.corpus[round % Self.corpus.count]
            var bytes = Array(base.utf8)
            switch round % 5 {
            case 0:  // splice a piece somewhere
                let piece = Array(pieces[random.int(0...pieces.count - 1)].utf8)
                bytes.insert(contentsOf: piece, at: random.int(0...bytes.count))
            case 1:  // cut
                bytes = Array(bytes.prefix(random.int(0...bytes.count)))
            case 2:  // flip bytes
                for _ in 0..<random.int(1...4) where !bytes.isEmpty {
                    bytes[random.int(0...bytes.count - 1)] = UInt8(random.int(0...255))
                }
            case 3:  // replace a run with a piece
                if bytes.count > 4 {
                    let start = random.int(0...bytes.count - 2)
                    let end = min(bytes.count, start + random.int(1...8))
                    bytes.replaceSubrange(start..<end, with: Array(pieces[random.int(0...pieces.count - 1)].utf8))
                }
            default:  // noise
                bytes = (0..<random.int(0...40)).map { _ in UInt8(random.int(0...255)) }
            }
            let response = await api.handle(APIRequest(
                method: "POST", path: "/database/1/\(APIWorld.containerName)/development/private/\(operation)",
                query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken], body: bytes))
            statuses[response.status, default: 0] += 1
            #expect((200..<300).contains(response.status) || (400..<500).contains(response.status),
                    "status \(response.status) for \(String(decoding: bytes, as: UTF8.self))")
            let json = try JSONValue.parse(Data(response.bodyBytes()))
            if response.status >= 400 {
                #expect(json["serverErrorCode"]?.stringValue != nil && json["reason"]?.stringValue != nil)
            }
        }
        #expect((statuses[200] ?? 0) > 100)
        // Still answering, and the data is intact.
        let alive = try await world.post("zones/list", "")
        #expect(alive.status == 200)
        #expect(try world.container.verify().isHealthy)
    }
}
