import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// The schema as a CloudKit Web Services client meets it (issue #13, `Docs/HTTP-API.md`
/// "Schema"): production refusals per record and per query, grants in the public
/// database — through the handler and through a live server's socket.
@Suite("Schema over HTTP")
struct SchemaRoutesTests {
    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Note (
                "___recordID" REFERENCE QUERYABLE,
                title STRING QUERYABLE SORTABLE,
                body STRING,
                rank INT64 QUERYABLE
            );
        """

    static func deployed() async throws -> APIWorld {
        let world = try APIWorld()
        try await world.container.importSchema(
            schema, into: SchemaID(container: APIWorld.containerName, environment: .development))
        try await world.container.deploySchema(container: APIWorld.containerName)
        return world
    }

    @Test("production: unknown type, unknown field and wrong type are per-record BAD_REQUEST; the valid record is saved")
    func productionSaves() async throws {
        let world = try await Self.deployed()
        let answer = try await world.post("records/modify", """
            {"atomic":false,"operations":[
              {"operationType":"create","record":{"recordName":"g","recordType":"Ghost","fields":{"x":{"value":"a"}}}},
              {"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"color":{"value":"red"}}}},
              {"operationType":"create","record":{"recordName":"b","recordType":"Note","fields":{"rank":{"value":"high"}}}},
              {"operationType":"create","record":{"recordName":"c","recordType":"Note","fields":{"title":{"value":"ok"},"rank":{"value":3}}}}]}
            """, environment: "production")
        #expect(answer.status == 200)
        let records = try #require(answer.json["records"]?.arrayValue)
        #expect(records[0]["serverErrorCode"] == "BAD_REQUEST")
        #expect(records[0]["reason"]?.stringValue?.contains("Cannot create new type Ghost in production schema") == true)
        #expect(records[1]["serverErrorCode"] == "BAD_REQUEST")
        #expect(records[1]["reason"]?.stringValue?.contains("'color'") == true)
        #expect(records[2]["serverErrorCode"] == "BAD_REQUEST")
        #expect(records[2]["reason"]?.stringValue?.contains("defined to be: INT64") == true)
        #expect(records[3]["recordChangeTag"] != nil)
    }

    @Test("production queries on fields without the index are request-level BAD_REQUEST naming the field, over a live socket")
    func productionQueriesOverSocket() async throws {
        let world = try await Self.deployed()
        _ = try await world.post("records/modify", """
            {"operations":[{"operationType":"create","record":{"recordName":"c","recordType":"Note","fields":{"title":{"value":"ok"}}}}]}
            """, environment: "production")
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        let query = "ckAPIToken=\(world.productionAPIToken)&ckWebAuthToken=\(world.aliceToken)"
        let uri = "/database/1/\(APIWorld.containerName)/production/private/records/query?\(query)"
        try await app.testLive { client in
            let refused = #"{"query":{"recordType":"Note","filterBy":[{"comparator":"EQUALS","fieldName":"body","fieldValue":{"value":"x"}}]}}"#
            try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: refused)) { response in
                #expect(response.status == .badRequest)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["serverErrorCode"] == "BAD_REQUEST")
                #expect(json["reason"]?.stringValue?.contains("Field 'body' is not marked queryable") == true)
            }
            let sorted = #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"rank"}]}}"#
            try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: sorted)) { response in
                #expect(response.status == .badRequest)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["reason"]?.stringValue?.contains("Field 'rank' is not marked sortable") == true)
            }
            let fine = #"{"query":{"recordType":"Note","sortBy":[{"fieldName":"title"}]}}"#
            try await client.execute(uri: uri, method: .post, body: ByteBuffer(string: fine)) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["records"]?[0]?["recordName"] == "c")
            }
        }
    }

    @Test("development: a new field is accepted and at once queryable")
    func developmentGrows() async throws {
        let world = try APIWorld()
        _ = try await world.post("records/modify", """
            {"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"Idea","fields":{"mood":{"value":"calm"}}}}]}
            """)
        let answer = try await world.post("records/query", """
            {"query":{"recordType":"Idea","filterBy":[{"comparator":"EQUALS","fieldName":"mood","fieldValue":{"value":"CALM"}}]}}
            """)
        #expect(answer.status == 200)
        #expect(answer.json["records"]?[0]?["recordName"] == "a")
        let schema = try world.container.schema(SchemaID(container: APIWorld.containerName, environment: .development))
        #expect(schema.recordType("Idea")?.field("mood")?.type == SchemaFieldType(.string))
    }
}
