import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusServer
import Foundation
import Hummingbird
import Logging
import Testing

@testable import CumulusReplication

/// What must never reach a follower's log: frames altered in transit, and a
/// superseded leader's history. Processes on loopback.
@Suite("Replication fencing between processes", .serialized)
struct FencingProcessTests {
    /// A leader served in this process through the real endpoints, whose stream
    /// alters one frame on its way out.
    final class TamperingLeader: @unchecked Sendable {
        let endpoints: ReplicationEndpoints
        let target: UInt64
        var decoder = ReplicationMessageDecoder()
        var nextSequence: UInt64 = 0

        init(endpoints: ReplicationEndpoints, target: UInt64) {
            self.endpoints = endpoints
            self.target = target
        }

        /// Flips one payload byte of frame `target` when it passes.
        func alter(_ bytes: [UInt8]) -> [UInt8] {
            decoder.append(bytes)
            guard case .frames(var frames, let head)? = try? decoder.next() else { return bytes }
            let first = (try? Frame(parsing: frames[0], expectedSequence: nil).sequence) ?? 0
            for index in frames.indices where first + UInt64(index) == target {
                frames[index][frames[index].count - 6] ^= 0x01
            }
            return ReplicationMessage.frames(frames, leaderHead: head).encoded()
        }

        func respond(_ request: Request) async -> Response {
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let apiRequest = APIRequest(method: request.method.rawValue, path: request.uri.path, query: query, headers: headers)
            switch await endpoints.answer(apiRequest) {
            case .json(let status, let bytes):
                return Response(status: .init(code: status), body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case .bytes(let bytes):
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case .stream(let stream):
                return Response(status: .ok, body: ResponseBody(asyncSequence: stream.map { ByteBuffer(bytes: self.alter($0)) }))
            case .snapshot:
                return Response(status: .notFound)
            }
        }
    }

    @Test("a frame altered in transit is refused: the follower stops with a clear error and applies nothing of it")
    func alteredFrameStopsFollower() async throws {
        let cluster = try Cluster()
        let leaderPath = cluster.path("leader")
        let container = try Container(path: leaderPath)
        try await ReplicationWorld.makeCommits(300, on: container, concurrency: 8)
        let head = container.store.head.sequence
        let leader = ReplicationLeader(container: container, logger: Logger(label: "test"))
        let tamper = TamperingLeader(
            endpoints: ReplicationEndpoints(node: leader.node, secret: Cluster.secret, leader: leader, follower: nil),
            target: head / 2)
        let listener = LoopbackListener { await tamper.respond($0) }
        defer { listener.stop() }
        try await listener.waitUntilListening()

        let follower = cluster.follower("follower", of: listener.url, extra: ["--seed", "stream"])
        try follower.start()
        let status = await follower.waitForExit(timeout: .seconds(60))
        #expect(status == 3, "\(follower.stderr.suffix(3000))")
        #expect(follower.stderr.contains("refused a frame from the leader"), "\(follower.stderr.suffix(3000))")
        #expect(follower.stderr.contains("log frame \(head / 2)"), "\(follower.stderr.suffix(3000))")
        // Nothing at or after the altered frame was stored, and what was is the leader's.
        let followerChain = try ReplicationWorld.chain(atPath: cluster.path("follower"))
        #expect(followerChain.count < Int(head / 2))
        for (index, hash) in followerChain.enumerated() {
            #expect(try container.store.chainHash(at: UInt64(index + 1)) == hash)
        }
        container.close()
    }

    @Test("promotion: a follower becomes leader in epoch 2; the old leader, back in epoch 1, is refused and fences itself")
    func promotionFencesOldLeader() async throws {
        let cluster = try Cluster()
        let oldLeader = try await cluster.startLeader("leader")
        let first = cluster.follower("first", of: oldLeader.url)
        let second = cluster.follower("second", of: oldLeader.url)
        try first.start()
        try second.start()
        for index in 0..<20 { #expect(try await cluster.save("r\(index)", value: index, on: oldLeader).status == 200) }
        let leaderHead = await TestHTTP.head(oldLeader.url)
        let head = try #require(leaderHead)
        try await TestHTTP.waitForHead(first.url, atLeast: head, timeout: .seconds(60))
        try await TestHTTP.waitForHead(second.url, atLeast: head, timeout: .seconds(60))

        // The hand-over: stop the leader, stop the chosen follower, promote it, start it as leader.
        #expect(oldLeader.stop() == 0)
        #expect(first.stop() == 0)
        let promote = NodeProcess(["promote", "--data", cluster.path("first")], port: 0, logDirectory: cluster.root + "/logs")
        try promote.start()
        #expect(await promote.waitForExit(timeout: .seconds(60)) == 0, "\(promote.stderr)")
        #expect(promote.stdout.contains("epoch 1 → 2"), "\(promote.stdout)")
        let newLeader = NodeProcess(
            cluster.leaderArguments("first"), port: NodeProcess.freePort(), logDirectory: cluster.root + "/logs")
        try newLeader.start()
        try await TestHTTP.waitUntilUp(newLeader.url)
        // The old credentials carried over; the new leader takes writes in epoch 2.
        #expect(try await cluster.save("after", value: 1, on: newLeader).status == 200)
        let health = try await TestHTTP.request(newLeader.url + "/healthz", headers: TestHTTP.operatorHeaders)
        #expect(health.json["epoch"] as? Int == 2)

        // The other follower moves to the new leader and adopts its epoch.
        #expect(second.stop() == 0)
        let moved = cluster.follower("second", of: newLeader.url)
        try moved.start()
        let newHead = await TestHTTP.head(newLeader.url)
        try await TestHTTP.waitForHead(moved.url, atLeast: try #require(newHead), timeout: .seconds(60))
        let movedRead = try await TestHTTP.request(
            cluster.privateURL(moved, "records/lookup"), method: .POST, body: ["records": [["recordName": "after"]]])
        #expect((movedRead.json["records"] as? [[String: Any]])?.first?["recordName"] as? String == "after")
        #expect(try await TestHTTP.request(moved.url + "/healthz", headers: TestHTTP.operatorHeaders).json["epoch"] as? Int == 2)
        #expect(moved.stop() == 0)

        // The old leader comes back in epoch 1 and still thinks it leads: until told,
        // it cannot know, and takes a write that forks history.
        try oldLeader.start()
        try await TestHTTP.waitUntilUp(oldLeader.url)
        #expect(try await cluster.save("forked-before", value: 1, on: oldLeader).status == 200)
        // A client of the old leader holds a token that covers the forked write.
        let forkedToken = try await cluster.syncToken(on: oldLeader)
        // A follower in epoch 2 pointed at it refuses it and stops...
        let misdirected = cluster.follower("second", of: oldLeader.url)
        try misdirected.start()
        #expect(await misdirected.waitForExit(timeout: .seconds(60)) == 3)
        #expect(misdirected.stderr.contains("epoch 1, older than this node's 2"), "\(misdirected.stderr.suffix(2000))")
        // ...and the old leader, told of epoch 2, says so in its log and takes no more writes.
        #expect(oldLeader.stderr.contains("superseded"), "\(oldLeader.stderr.suffix(2000))")
        let refused = try await cluster.save("forked", value: 1, on: oldLeader)
        #expect(refused.status == 503)
        #expect(refused.json["serverErrorCode"] as? String == "NOT_LEADER")
        #expect((refused.json["reason"] as? String)?.contains("superseded") == true)
        // The second follower's log never took anything from the old leader.
        #expect(try ReplicationWorld.chain(atPath: cluster.path("second")) == ReplicationWorld.chain(atPath: cluster.path("first")))
        #expect(oldLeader.stop() == 0)

        // Made a follower of the new leader, the old leader's forked log is refused...
        let rejoin = cluster.follower("leader", of: newLeader.url)
        try rejoin.start()
        #expect(await rejoin.waitForExit(timeout: .seconds(60)) == 3)
        #expect(rejoin.stderr.contains("--reseed") || rejoin.stderr.contains("re-seed"), "\(rejoin.stderr.suffix(2000))")
        // ...until it is re-seeded: the forked copy is moved aside, not deleted.
        let reseeded = cluster.follower("leader", of: newLeader.url, extra: ["--reseed"])
        try reseeded.start()
        let finalHead = await TestHTTP.head(newLeader.url)
        try await TestHTTP.waitForHead(reseeded.url, atLeast: try #require(finalHead), timeout: .seconds(60))
        // The promotion recorded where epoch 2 began: the forked token is expired on the
        // new leader and on the re-seeded old one, as CloudKit answers a stale token.
        for node in [newLeader, reseeded] {
            let answer = try await cluster.zoneChanges(on: node, since: forkedToken)
            #expect(answer.json["serverErrorCode"] as? String == "CHANGE_TOKEN_EXPIRED", "\(node.url): \(answer.text)")
        }
        #expect(reseeded.stop() == 0)
        #expect(newLeader.stop() == 0)
        #expect(try ReplicationWorld.chain(atPath: cluster.path("leader")) == ReplicationWorld.chain(atPath: cluster.path("first")))
        let aside = try FileManager.default.contentsOfDirectory(atPath: cluster.root).filter { $0.hasPrefix("leader.discarded-") }
        #expect(aside.count == 1)
    }
}
