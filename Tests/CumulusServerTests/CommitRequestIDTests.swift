import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Every kind of write a request makes lands in the log under that request's ID (the
/// `X-Request-ID` it sent, else the one the server gave it), so the log and audit
/// exports match the server's own logs: through real sockets, one kind per test.
@Suite("Commit request IDs")
struct CommitRequestIDTests {
    /// Alice's (or bob's) POST of `body` to `operation` with `X-Request-ID: requestID`,
    /// over the live server; returns the parsed answer.
    static func post(
        _ client: LiveClient, _ world: APIWorld, _ operation: String, _ body: String, requestID: String,
        database: String = "private", token: String? = nil
    ) async throws -> JSONValue {
        let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(token ?? world.aliceToken)"
        let uri = "/database/1/\(APIWorld.containerName)/development/\(database)/\(operation)?\(query)"
        var headers = HTTPFields()
        if let name = HTTPField.Name("x-request-id") { headers[name] = requestID }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
            #expect($0.status == .ok, "\(operation): \(String(buffer: $0.body))")
            return try JSONValue.parse(Data($0.body.readableBytesView))
        }
    }

    /// The request IDs of the commits after `sequence`, in order.
    static func requestIDs(_ world: APIWorld, after sequence: UInt64) throws -> [String] {
        let store = world.container.store
        guard store.head.sequence > sequence else { return [] }
        return try store.range(from: sequence + 1).map(\.requestID)
    }

    static func live(_ body: @escaping @Sendable (APIWorld, LiveClient) async throws -> Void) async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        try await app.testLive { client in try await body(world, client) }
    }

    @Test("zones/modify: a created and a deleted zone each commit under the request's ID")
    func zones() async throws {
        try await Self.live { world, client in
            var head = world.container.store.head.sequence
            _ = try await Self.post(
                client, world, "zones/modify",
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Z"}}}]}"#, requestID: "zone-create-1")
            #expect(try Self.requestIDs(world, after: head) == ["zone-create-1"])
            head = world.container.store.head.sequence
            _ = try await Self.post(
                client, world, "zones/modify",
                #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Z"}}}]}"#, requestID: "zone-delete-1")
            #expect(try Self.requestIDs(world, after: head) == ["zone-delete-1"])
        }
    }

    @Test("zones/modify: several operations are one commit under the request's ID; an unknown operation refuses them all before any is planned")
    func zonesInOneCommit() async throws {
        try await Self.live { world, client in
            let head = world.container.store.head.sequence
            let answer = try await Self.post(
                client, world, "zones/modify", #"""
                    {"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"A"}}},
                      {"operationType":"create","zone":{"zoneID":{"zoneName":"B"}}},
                      {"operationType":"delete","zone":{"zoneID":{"zoneName":"A"}}}]}
                    """#, requestID: "zones-2")
            #expect(answer["zones"]?[2]?["deleted"] == true, "\(answer)")
            #expect(try Self.requestIDs(world, after: head) == ["zones-2"])
            let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
            let refused = try await client.execute(
                uri: "/database/1/\(APIWorld.containerName)/development/private/zones/modify?\(query)", method: .post,
                body: ByteBuffer(string: #"""
                    {"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"C"}}},
                      {"operationType":"rename","zone":{"zoneID":{"zoneName":"B"}}}]}
                    """#)) { $0.status }
            #expect(refused == .badRequest)
            #expect(try Self.requestIDs(world, after: head) == ["zones-2"], "nothing was committed")
        }
    }

    @Test("subscriptions/modify: a saved and a deleted subscription each commit under the request's ID")
    func subscriptions() async throws {
        try await Self.live { world, client in
            var head = world.container.store.head.sequence
            let saved = try await Self.post(
                client, world, "subscriptions/modify", #"""
                    {"operations":[{"operationType":"create","subscription":{"subscriptionID":"s1","subscriptionType":"zone",
                      "zoneID":{"zoneName":"_defaultZone"}}}]}
                    """#, requestID: "subscription-save-1")
            #expect(saved["subscriptions"]?[0]?["subscriptionID"] == "s1", "\(saved)")
            #expect(try Self.requestIDs(world, after: head) == ["subscription-save-1"])
            head = world.container.store.head.sequence
            _ = try await Self.post(
                client, world, "subscriptions/modify",
                #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"s1"}}]}"#,
                requestID: "subscription-delete-1")
            #expect(try Self.requestIDs(world, after: head) == ["subscription-delete-1"])
        }
    }

    @Test("records/modify and records/accept: the saves and the acceptance commit under their requests' IDs")
    func recordsAndShares() async throws {
        try await Self.live { world, client in
            _ = try await Self.post(
                client, world, "zones/modify",
                #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#, requestID: "zone")
            var head = world.container.store.head.sequence
            let saved = try await Self.post(
                client, world, "records/modify",
                SharingRoutesTests.share("cloudkit.zoneshare", zone: "Trip", bob: world.bob), requestID: "share-save-1")
            let guid = try #require(saved["records"]?[0]?["shortGUID"]?.stringValue, "\(saved)")
            #expect(try Self.requestIDs(world, after: head) == ["share-save-1"])
            head = world.container.store.head.sequence
            let accepted = try await Self.post(
                client, world, "records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, requestID: "share-accept-1",
                database: "shared", token: world.bobToken)
            #expect(accepted["results"]?[0]?["participantStatus"] == "ACCEPTED", "\(accepted)")
            #expect(try Self.requestIDs(world, after: head) == ["share-accept-1"])
        }
    }
}
