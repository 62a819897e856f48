import Crypto
import CumulusEngine
import CumulusModel
import CumulusServer
import CumulusViews
import Foundation
import Logging
import Testing

@testable import CumulusReplication

/// The follower's client over a real socket: what it refuses to hold.
@Suite("Leader client")
struct LeaderClientTests {
    /// Runs `body` with a client of `leader` served on a loopback port (once it
    /// answers), and the endpoints serving it; shuts the client down after.
    static func serving<T: Sendable>(
        _ leader: ReplicationLeader, maxAssetBytes: Int64 = Container.defaultMaxAssetBytes,
        _ body: (LeaderClient, ReplicationEndpoints) async throws -> T
    ) async throws -> T {
        let container = leader.container
        let endpoints = ReplicationEndpoints(node: leader.node, secret: Cluster.secret, leader: leader, follower: nil)
        let api = CloudKitAPI(container: container, auth: try AuthStore(environment: container.store.logEnvironment), replication: endpoints)
        let port = NodeProcess.freePort()
        let app = CumulusHTTPServer.application(api: api, host: "127.0.0.1", port: port, logger: Logger(label: "test"))
        let server = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { server.cancel() }
        // These tests are of what the client asks and is told, not of how fast: the
        // server shares the test process with the whole suite, and its answers have come
        // later than the 10 s a follower allows a silent leader (a fresh clone's run).
        let client = LeaderClient(
            leaderURL: "http://127.0.0.1:\(port)", secret: Cluster.secret, maxAssetBytes: maxAssetBytes,
            readTimeout: .seconds(180))
        do {
            // The server is a task, which on a busy machine can wait a minute for a thread.
            try await waitUntil("the leader to listen", timeout: .seconds(180)) { (try? await client.hello()) != nil }
            let result = try await body(client, endpoints)
            await client.shutdown()
            return result
        } catch {
            await client.shutdown()
            throw error
        }
    }

    @Test("an asset larger than this node's --max-asset-bytes is refused as it arrives; one within it is fetched")
    func assetFetchBounded() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        defer { container.close() }
        let bytes = [UInt8](repeating: 0x5A, count: 4096)
        let checksum = try #require(AssetChecksum(bytes: Array(SHA256.hash(data: bytes))))
        try container.assets.install(bytes, as: checksum)
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        try await Self.serving(leader, maxAssetBytes: 4095) { client, _ in
            do {
                _ = try await client.asset(checksum)
                Issue.record("an asset over the limit was fetched")
            } catch let error as ReplicationError {
                guard case .refused(let why) = error else {
                    Issue.record("expected a refusal, got \(error)")
                    return
                }
                #expect(why.contains("--max-asset-bytes"))
            }
        }
        let fetched = try await Self.serving(leader, maxAssetBytes: 4096) { client, _ in try await client.asset(checksum) }
        #expect(fetched == bytes)
    }

    @Test("the client shakes hands once and reuses the session for every request after")
    func sessionReused() async throws {
        let container = try Container(path: ReplicationWorld.temporaryPath())
        defer { container.close() }
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        // Counted from after the client's first answer: waiting for the server to
        // listen may take more than one handshake on a loaded machine (an answer that
        // arrived after the client gave up leaves its session behind).
        let (before, after) = try await Self.serving(leader) { client, endpoints in
            let before = endpoints.sessions.count
            for _ in 0..<5 { _ = try await client.status() }
            return (before, endpoints.sessions.count)
        }
        #expect(before >= 1 && after == before, "sessions: \(before) after the first answer, \(after) after five more requests")
    }
}
