import CumulusModel
import CumulusServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// Requests that would make the server do unbounded work for one client, each sent
/// through the real server over a socket (issue 15): each is refused or bounded
/// before the work is done.
@Suite("Hostile clients")
struct HostileClientTests {
    /// `operation` in alice's private database, with her credentials, over the socket.
    static func uri(_ world: APIWorld, _ operation: String) -> String {
        "/database/1/\(APIWorld.containerName)/development/private/\(operation)?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
    }

    @Test("zones/lookup, subscriptions/lookup and changes/zone with 201 entries are LIMIT_EXCEEDED; 200 are served")
    func listsAreCapped() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        func zones(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"zoneID":{"zoneName":"z\#($0)"}}"# }.joined(separator: ",") + "]"
        }
        func subscriptions(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"subscriptionID":"s\#($0)"}"# }.joined(separator: ",") + "]"
        }
        let cases: [(String, (Int) -> String)] = [
            ("zones/lookup", { #"{"zones":\#(zones($0))}"# }),
            ("subscriptions/lookup", { #"{"subscriptions":\#(subscriptions($0))}"# }),
            ("changes/zone", { #"{"zones":\#(zones($0))}"# }),
        ]
        let requests = cases.map { (operation, body) in (Self.uri(world, operation), body(201), body(200)) }
        try await app.test(.live) { client in
            for (uri, over, within) in requests {
                try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: over)) { response in
                    let json = try JSONValue.parse(Data(response.body.readableBytesView))
                    #expect(json["serverErrorCode"] == "LIMIT_EXCEEDED", "\(uri)")
                    #expect(json["reason"]?.stringValue?.contains("the limit is 200") == true, "\(uri)")
                }
                try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: within)) { response in
                    #expect(response.status == .ok, "\(uri)")
                }
            }
        }
    }

    @Test("changes/zone shares one response's records out over its zones: the first get theirs, the rest are told to ask again")
    func changesResponseIsBounded() async throws {
        let world = try APIWorld()
        let zoneNames = ["a", "b", "c"]
        let create = zoneNames.map { #"{"operationType":"create","zone":{"zoneID":{"zoneName":"\#($0)"}}}"# }
        #expect(try await world.post("zones/modify", #"{"operations":[\#(create.joined(separator: ","))]}"#).status == 200)
        // 700 records in each zone, 200 per request (CloudKit's limit).
        for zone in zoneNames {
            for batch in 0..<4 {
                let count = batch < 3 ? 200 : 100
                let operations = (0..<count).map {
                    #"{"operationType":"forceReplace","record":{"recordName":"r\#(batch)-\#($0)","recordType":"Item","fields":{"n":{"value":\#($0)}}}}"#
                }
                let body = #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(operations.joined(separator: ","))]}"#
                #expect(try await world.post("records/modify", body).status == 200)
            }
        }
        let app = CumulusHTTPServer.application(api: world.api, port: 0, logger: Logger(label: "test"))
        let uri = Self.uri(world, "changes/zone")
        let zones = zoneNames.map { #"{"zoneID":{"zoneName":"\#($0)"}}"# }.joined(separator: ",")
        try await app.test(.live) { client in
            let body = #"{"resultsLimit":1000,"zones":[\#(zones)]}"#
            try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                let answers = json["zones"]?.arrayValue ?? []
                #expect(answers.count == 3)
                let counts = answers.map { $0["records"]?.arrayValue?.count }
                #expect(counts[0] == 700 && counts[1] == 300, "\(counts)")
                #expect(counts.compactMap { $0 }.reduce(0, +) <= CloudKitAPI.maxRecordsPerResponse)
                #expect(answers[0]["moreComing"] == false)
                #expect(answers[1]["moreComing"] == true, "the second zone's page was cut to what was left")
                #expect(answers[2]["serverErrorCode"] == "LIMIT_EXCEEDED")
                #expect(answers[2]["zoneID"]?["zoneName"] == "c")
            }
        }
    }
}
