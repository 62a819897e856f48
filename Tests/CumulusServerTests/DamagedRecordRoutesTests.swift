import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import CumulusViews
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// A stored record whose value bytes were damaged behind the server's back (a bad
/// disk, a hand-edited data file): reads check values as they decode them, so the
/// damage must reach the client as CloudKit's server error, over a live socket,
/// never as a record that silently lost its fields.
@Suite("Damaged stored records over HTTP")
struct DamagedRecordRoutesTests {
    @Test("lookup gives the damaged record INTERNAL_ERROR and its neighbour as ever; query and changes fail with 500")
    func damageReachesTheClient() async throws {
        let world = try APIWorld()
        _ = try await world.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
        let saved = try await world.post("records/modify", #"""
            {"zoneID":{"zoneName":"Lists"},"operations":[
              {"operationType":"create","record":{"recordName":"good","recordType":"Item","fields":{"title":{"value":"zebra one"}}}},
              {"operationType":"create","record":{"recordName":"bad","recordType":"Item","fields":{"title":{"value":"zebra two"}}}}]}
            """#)
        #expect(saved.json["records"]?[1]?["recordChangeTag"] != nil)

        // Damage "bad"'s title text (0xFF is never UTF-8) in the records view.
        let database = world.container.privateDatabase(container: APIWorld.containerName, user: world.alice).id
        let zone = ZoneID(zoneName: "Lists", ownerName: world.alice)
        let key = ViewKeys.record(FeedKeys.zone(database, zone), "bad")
        let views = world.container.views
        try world.container.store.environment.write { txn in
            var bytes = try #require(try txn.get(views.tables.records, key: key))
            let text = Array("zebra two".utf8)
            let at = try #require((0...(bytes.count - text.count)).first { Array(bytes[$0..<$0 + text.count]) == text })
            bytes[at] = 0xFF
            try txn.put(views.tables.records, key: key, value: bytes)
        }

        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        let base = "/database/1/\(APIWorld.containerName)/development/private/records/"
        let (lookupURI, queryURI, changesURI) = (base + "lookup?" + query, base + "query?" + query, base + "changes?" + query)
        try await app.testLive { client in
            let lookup = #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"good"},{"recordName":"bad"}]}"#
            try await client.execute(uri: lookupURI, method: .post, body: ByteBuffer(string: lookup)) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["records"]?[0]?["fields"]?["title"]?["value"] == "zebra one")
                #expect(json["records"]?[1]?["recordName"] == "bad")
                #expect(json["records"]?[1]?["serverErrorCode"] == "INTERNAL_ERROR")
                #expect(json["records"]?[1]?["fields"] == nil)
            }
            let sorted = #"{"zoneID":{"zoneName":"Lists"},"query":{"recordType":"Item","sortBy":[{"fieldName":"title"}]}}"#
            try await client.execute(uri: queryURI, method: .post, body: ByteBuffer(string: sorted)) { response in
                #expect(response.status == .internalServerError)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["serverErrorCode"] == "INTERNAL_ERROR")
            }
            let changes = #"{"zoneID":{"zoneName":"Lists"}}"#
            try await client.execute(uri: changesURI, method: .post, body: ByteBuffer(string: changes)) { response in
                #expect(response.status == .internalServerError)
            }
        }
    }
}
