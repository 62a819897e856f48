import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import Testing

@testable import CumulusReplication

/// A follower serves a participant's shared database as the leader does (issue 17's
/// "Done when"): the share's access arrives in the log with the records it governs,
/// so the follower's answers, over its own socket, are the leader's.
@Suite("The shared database on a follower")
struct SharedDatabaseFollowerTests {
    static let containerName = ReplicationWorld.containerID

    /// A leader with alice and bob, its API, and a follower seeded from it.
    final class Pair: @unchecked Sendable {
        let leader: Container
        let follower: Container
        let leaderAPI: CloudKitAPI
        let followerAPI: CloudKitAPI
        let apiToken: String
        let alice: String
        let aliceToken: String
        let bob: String
        let bobToken: String
        private let paths: [String]

        init() throws {
            let leaderPath = ReplicationWorld.temporaryPath("shared-leader")
            leader = try Container(path: leaderPath)
            let auth = try AuthStore(environment: leader.store.logEnvironment)
            apiToken = try auth.createAPIToken(container: SharedDatabaseFollowerTests.containerName, environment: .development)
            alice = try auth.addUser()
            aliceToken = try auth.createWebAuthToken(for: alice, container: SharedDatabaseFollowerTests.containerName)
            bob = try auth.addUser()
            bobToken = try auth.createWebAuthToken(for: bob, container: SharedDatabaseFollowerTests.containerName)
            leaderAPI = CloudKitAPI(container: leader, auth: auth)
            // Users and tokens are configuration, copied to the follower when it is seeded.
            let followerPath = ReplicationWorld.temporaryPath("shared-follower")
            follower = try ReplicationWorld.follower(of: leader, path: followerPath)
            followerAPI = CloudKitAPI(container: follower, auth: try AuthStore(environment: follower.store.logEnvironment))
            paths = [leaderPath, followerPath]
        }

        deinit {
            leader.close()
            follower.close()
            for path in paths { try? FileManager.default.removeItem(atPath: path) }
        }

        /// Hands the follower every frame it lacks.
        func replicate() async throws {
            let frames = try leader.store.rawFrames(from: follower.store.head.sequence + 1, limit: 10_000, maxBytes: .max)
            _ = try await follower.writer.replicate(frames)
        }

        func request(_ operation: String, _ body: String, database: String, token: String) -> APIRequest {
            APIRequest(
                method: operation.hasSuffix("list") ? "GET" : "POST",
                path: "/database/1/\(SharedDatabaseFollowerTests.containerName)/development/\(database)/\(operation)",
                query: ["ckAPIToken": apiToken, "ckWebAuthToken": token], body: Array(body.utf8))
        }

        /// A call to the leader, through its handler.
        func leaderCall(_ operation: String, _ body: String, database: String = "private", token: String? = nil) async throws -> JSONValue {
            let response = await leaderAPI.handle(request(operation, body, database: database, token: token ?? aliceToken))
            return try JSONValue.parse(Data(response.bodyBytes()))
        }
    }

    /// Bob's answers worth comparing: names and change tags, not the signed tokens.
    static func digest(_ json: JSONValue) -> String {
        func walk(_ value: JSONValue) -> String {
            switch value {
            case .object(let members):
                return "{" + members.keys.sorted().filter { !["syncToken", "timestamp", "continuationMarker", "uuid"].contains($0) }
                    .map { "\($0):\(walk(members[$0] ?? .null))" }.joined(separator: ",") + "}"
            case .array(let items):
                return "[" + items.map(walk).sorted().joined(separator: ",") + "]"
            default:
                return "\(value)"
            }
        }
        return walk(json)
    }

    @Test("bob's zones, lookups, queries and changes come back the same from the follower's socket; removal reaches it too")
    func followerServesBob() async throws {
        let pair = try Pair()
        let zone = #""zoneID":{"zoneName":"Trip","ownerRecordName":"\#(pair.alice)"}"#
        _ = try await pair.leaderCall("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#)
        _ = try await pair.leaderCall("records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"create","record":{"recordName":"a1","recordType":"Place","fields":{"title":{"value":"Lisbon"}}}},{"operationType":"create","record":{"recordName":"share","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"a1"},"participants":[{"userIdentity":{"userRecordName":"\#(pair.bob)"},"permission":"READ_WRITE"}]}}]}"#)
        _ = try await pair.leaderCall("records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"create","record":{"recordName":"a2","recordType":"Place","fields":{},"parent":{"recordName":"a1"}}},{"operationType":"create","record":{"recordName":"hidden","recordType":"Place","fields":{}}}]}"#)
        let shareRecord = try await pair.leaderCall("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"share"}]}"#)
        let guid = try #require(shareRecord["records"]?[0]?["shortGUID"]?.stringValue, "\(shareRecord)")
        let accepted = try await pair.leaderCall("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "shared", token: pair.bobToken)
        #expect(accepted["results"]?[0]?["participantStatus"] == "ACCEPTED", "\(accepted)")
        // Bob writes through the leader, then reads his write on the follower.
        _ = try await pair.leaderCall("records/modify", #"{\#(zone),"operations":[{"operationType":"create","record":{"recordName":"b1","recordType":"Place","fields":{"by":{"value":"bob"}},"parent":{"recordName":"a1"}}}]}"#, database: "shared", token: pair.bobToken)
        let leaderChanges = try await pair.leaderCall("changes/zone", #"{"zones":[{\#(zone)}]}"#, database: "shared", token: pair.bobToken)
        let leaderToken = try #require(leaderChanges["zones"]?[0]?["syncToken"]?.stringValue)
        try await pair.replicate()

        let reads: [(String, String)] = [
            ("zones/list", "{}"),
            ("records/lookup", #"{\#(zone),"records":[{"recordName":"a1"},{"recordName":"a2"},{"recordName":"b1"},{"recordName":"hidden"}]}"#),
            ("records/query", #"{\#(zone),"query":{"recordType":"Place"}}"#),
            ("changes/zone", #"{"zones":[{\#(zone)}]}"#),
            ("changes/database", "{}"),
        ]
        let app = CumulusHTTPServer.application(api: pair.followerAPI, logger: Logger(label: "follower"))
        try await app.test(.live) { client in
            func followerCall(_ operation: String, _ body: String) async throws -> JSONValue {
                let query = "ckAPIToken=\(pair.apiToken)&ckWebAuthToken=\(pair.bobToken)"
                return try await client.execute(
                    uri: "/database/1/\(Self.containerName)/development/shared/\(operation)?\(query)",
                    method: operation.hasSuffix("list") ? .get : .post, body: .init(string: body)
                ) { response in try JSONValue.parse(Data(response.body.readableBytesView)) }
            }
            for (operation, body) in reads {
                let onLeader = try await pair.leaderCall(operation, body, database: "shared", token: pair.bobToken)
                let onFollower = try await followerCall(operation, body)
                #expect(Self.digest(onFollower) == Self.digest(onLeader), "\(operation): leader \(onLeader) follower \(onFollower)")
            }
            let hidden = try await followerCall("records/lookup", #"{\#(zone),"records":[{"recordName":"hidden"}]}"#)
            #expect(hidden["records"]?[0]?["serverErrorCode"] == "NOT_FOUND")
            // The leader's token works on the follower: nothing new since.
            let since = try await followerCall("changes/zone", #"{"zones":[{\#(zone),"syncToken":"\#(leaderToken)"}]}"#)
            #expect(since["zones"]?[0]?["records"] == .array([]), "\(since)")
            // A write sent to the follower is not taken there.
            let write = try await followerCall("records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#)
            #expect(write["serverErrorCode"] != nil || write["results"]?[0]?["serverErrorCode"] != nil, "\(write)")

            // Alice removes bob on the leader; once replicated, the follower refuses him.
            _ = try await pair.leaderCall("records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"share","recordType":"cloudkit.share","fields":{},"participants":[]}}]}"#)
            try await pair.replicate()
            let refused = try await followerCall("records/lookup", #"{\#(zone),"records":[{"recordName":"a1"}]}"#)
            #expect(refused["records"]?[0]?["serverErrorCode"] == "ACCESS_DENIED", "\(refused)")
            #expect(try await followerCall("zones/list", "{}")["zones"] == .array([]))
        }
        #expect(try pair.follower.verify().isHealthy)
    }
}

extension JSONValue {
    /// `records[i]`-style access for tests.
    fileprivate subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
