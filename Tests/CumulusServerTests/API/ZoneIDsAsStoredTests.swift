import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// Zone IDs answered as stored (issue 41, item 5; `Docs/HTTP-API.md`, "What clients send"): a zone named
/// with the owner left out, or as `__defaultOwner__`, is answered with its real
/// owner's record name, also on a page with no records and in a zone's error, where
/// nothing stored was at hand to copy it from. Through a live server's socket.
@Suite("Zone IDs answered as stored")
struct ZoneIDsAsStoredTests {
    /// POSTs `body` to `operation` in alice's private database: the JSON answer.
    static func alice(_ client: LiveClient, _ world: APIWorld, _ operation: String, _ body: String) async throws
        -> JSONValue
    {
        let uri = LiveExchange.path(operation) + "?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        let answer = try await LiveExchange.send(client, .post, uri, body: body)
        #expect(answer.status == .ok, "\(operation): \(String(describing: answer.json))")
        return try #require(answer.json)
    }

    @Test("changes/zone and records/changes name the zone's real owner on an empty page and in a zone's error")
    func emptyPagesNameTheOwner() async throws {
        let world = try APIWorld()
        try await LiveExchange.live(world) { client in
            _ = try await Self.alice(client, world, "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"work"}}}]}"#)
            for zoneID in [#"{"zoneName":"work"}"#, #"{"zoneName":"work","ownerRecordName":"__defaultOwner__"}"#, #"{"zoneName":"_defaultZone"}"#] {
                let changes = try await Self.alice(client, world, "changes/zone", #"{"zones":[{"zoneID":\#(zoneID)}]}"#)
                let page = try #require(changes["zones"]?[0])
                #expect(page["records"]?.arrayValue?.isEmpty == true, "\(page)")
                #expect(page["zoneID"]?["ownerRecordName"]?.stringValue == world.alice, "changes/zone \(zoneID): \(page)")
                let records = try await Self.alice(client, world, "records/changes", #"{"zoneID":\#(zoneID)}"#)
                #expect(records["records"]?.arrayValue?.isEmpty == true, "\(records)")
                #expect(records["zoneID"]?["ownerRecordName"]?.stringValue == world.alice, "records/changes \(zoneID): \(records)")
            }
            // A page after the last change holds no records either.
            _ = try await Self.alice(client, world, "records/modify", #"{"zoneID":{"zoneName":"work"},"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note"}}]}"#)
            let first = try await Self.alice(client, world, "records/changes", #"{"zoneID":{"zoneName":"work"}}"#)
            let token = try #require(first["syncToken"]?.stringValue)
            let after = try await Self.alice(client, world, "records/changes", #"{"zoneID":{"zoneName":"work"},"syncToken":"\#(token)"}"#)
            #expect(after["records"]?.arrayValue?.isEmpty == true, "\(after)")
            #expect(after["zoneID"]?["ownerRecordName"]?.stringValue == world.alice, "\(after)")
            let missing = try await Self.alice(client, world, "changes/zone", #"{"zones":[{"zoneID":{"zoneName":"gone"}}]}"#)
            #expect(missing["zones"]?[0]?["serverErrorCode"] == "ZONE_NOT_FOUND", "\(missing)")
            #expect(missing["zones"]?[0]?["zoneID"]?["ownerRecordName"]?.stringValue == world.alice, "\(missing)")
        }
    }
}
