import CumulusEngine
import CumulusLog
import Foundation
import NIOHTTP1
import Synchronization
import Testing

@testable import CumulusReplication

/// Leader and followers as separate `cumulus serve` processes on loopback (issue #8's
/// "Done when"). Serialized: they start processes and compare whole directories.
@Suite("Replication between processes", .serialized)
struct ReplicationProcessTests {
    @Test("empty followers catch up to a leader holding 100,000 commits, by stream and by snapshot")
    func catchUpFromEmpty() async throws {
        let cluster = try Cluster()
        let leaderData = cluster.path("leader")
        do {
            let container = try Container(path: leaderData)
            try await ReplicationWorld.makeCommits(100_000, on: container, concurrency: 64)
            container.close()
        }
        let leader = try await cluster.startLeader("leader", dev: false)
        let leaderHead = await TestHTTP.head(leader.url)
        let head = try #require(leaderHead)
        #expect(head >= 99_000)
        let streamed = cluster.follower("streamed", of: leader.url, extra: ["--seed", "stream"])
        let seeded = cluster.follower("seeded", of: leader.url)
        try streamed.start()
        try seeded.start()
        try await TestHTTP.waitForHead(seeded.url, atLeast: head, timeout: .seconds(120))
        try await TestHTTP.waitForHead(streamed.url, atLeast: head, timeout: .seconds(300))
        #expect(seeded.stdout.contains("follower"))
        for node in [leader, streamed, seeded] { #expect(node.stop() == 0, "\(node.stderr.suffix(2000))") }
        let expected = try ReplicationWorld.digests(atPath: leaderData)
        #expect(try ReplicationWorld.digests(atPath: cluster.path("streamed")) == expected)
        #expect(try ReplicationWorld.digests(atPath: cluster.path("seeded")) == expected)
        #expect(try ReplicationWorld.chain(atPath: cluster.path("streamed")) == ReplicationWorld.chain(atPath: leaderData))
    }

    @Test("a follower SIGKILLed 20 times while the leader takes writes converges to the leader every time")
    func killedFollowerConverges() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        let control = LoadControl()
        let load = Task { await cluster.writeLoad(on: leader, control: control) }
        var generator = SystemRandomNumberGenerator()
        var restartedAt: UInt64 = 0
        for round in 0..<20 {
            // Killed while the leader takes writes: some since the last restart, then a
            // random moment more.
            var leaderHead: UInt64?
            try await waitUntil("leader writes past \(restartedAt) in round \(round) (head \(leaderHead.map(String.init) ?? "unknown"))") {
                leaderHead = await TestHTTP.head(leader.url)
                return (leaderHead ?? 0) > restartedAt
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...400, using: &generator)))
            follower.kill()
            // What the follower holds after a kill is always a prefix of the leader's log.
            let followerChain = try ReplicationWorld.chain(atPath: cluster.path("follower"))
            let leaderChain = try ReplicationWorld.chain(atPath: cluster.path("leader"))
            #expect(Array(leaderChain.prefix(followerChain.count)) == followerChain, "round \(round)")
            try follower.start()
            // It converges: it reaches the leader's position as of its restart.
            let headAtRestart = await TestHTTP.head(leader.url)
            let target = try #require(headAtRestart)
            try await TestHTTP.waitForHead(follower.url, atLeast: target, timeout: .seconds(60))
            restartedAt = target
        }
        // More than 100 saves in all: on a busy machine the load may need longer.
        try await waitUntil("more than 100 saves by the write load (\(control.saves) so far)") { control.saves > 100 }
        control.stop()
        let saves = await load.value
        #expect(saves > 100)
        let leaderHead = await TestHTTP.head(leader.url)
        let head = try #require(leaderHead)
        try await TestHTTP.waitForHead(follower.url, atLeast: head, timeout: .seconds(60))
        #expect(leader.stop() == 0)
        #expect(follower.stop() == 0, "\(follower.stderr.suffix(2000))")
        #expect(try ReplicationWorld.digests(atPath: cluster.path("follower")) == ReplicationWorld.digests(atPath: cluster.path("leader")))
        #expect(try ReplicationWorld.chain(atPath: cluster.path("follower")) == ReplicationWorld.chain(atPath: cluster.path("leader")))
    }

    @Test("after the leader is SIGKILLed under writes, the follower's log is a prefix of the leader's, hash by hash")
    func leaderKilledFollowerIsPrefix() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        let control = LoadControl()
        let load = Task { await cluster.writeLoad(on: leader, writers: 8, control: control) }
        // Killed under writes, once the follower holds a good part of them.
        var followerHead: UInt64?
        try await waitUntil("the follower to hold 200 commits (it holds \(followerHead.map(String.init) ?? "nothing"))") {
            followerHead = await TestHTTP.head(follower.url)
            return (followerHead ?? 0) >= 200
        }
        leader.kill()
        control.stop()
        _ = await load.value
        // The follower notices the leader is gone and keeps serving reads, retrying
        // the leader in the background.
        var state: String?
        try await waitUntil("the follower to notice the leader is gone (state \(state ?? "unknown"))") {
            state = await TestHTTP.followerState(follower.url)
            return state == "retrying" || state == "connecting"
        }
        let stillServing = await TestHTTP.head(follower.url)
        #expect(stillServing != nil)
        #expect(follower.stop() == 0)
        let followerChain = try ReplicationWorld.chain(atPath: cluster.path("follower"))
        let leaderChain = try ReplicationWorld.chain(atPath: cluster.path("leader"))
        #expect(followerChain.count > 10)
        #expect(followerChain.count <= leaderChain.count)
        #expect(Array(leaderChain.prefix(followerChain.count)) == followerChain)
    }

    @Test("a follower refuses writes naming the leader, and reads its own writes made on the leader")
    func refusesWritesAndReadsYourWrites() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()

        let refused = try await cluster.save("x", value: 1, on: follower)
        #expect(refused.status == 503)
        #expect(refused.json["serverErrorCode"] as? String == "NOT_LEADER")
        #expect(refused.json["leaderURL"] as? String == leader.url)
        #expect((refused.json["reason"] as? String)?.contains(leader.url) == true)

        for round in 0..<5 {
            let saved = try await cluster.save("mine-\(round)", value: round, on: leader)
            #expect(saved.status == 200)
            let sequence = try #require(saved.headers["x-cumulus-sequence"])
            let read = try await TestHTTP.readWhenCaughtUp(
                cluster.privateURL(follower, "records/lookup"), body: ["records": [["recordName": "mine-\(round)"]]],
                minSequence: sequence)
            #expect(read.status == 200, "\(read.text)")
            let records = read.json["records"] as? [[String: Any]] ?? []
            let fields = records.first?["fields"] as? [String: Any]
            #expect((fields?["n"] as? [String: Any])?["value"] as? Int == round, "\(read.text)")
        }
        // A change token from the leader works on the follower: it waits for the
        // token's position if it has to, then lists what came after it.
        let first = try await TestHTTP.request(
            cluster.privateURL(leader, "records/changes"), method: .POST, body: ["zoneID": ["zoneName": "_defaultZone"]])
        let token = try #require(first.json["syncToken"] as? String, "\(first.text)")
        let afterToken = try await cluster.save("after-token", value: 7, on: leader)
        #expect(afterToken.status == 200)
        let written = try #require(afterToken.headers["x-cumulus-sequence"])
        let later = try await TestHTTP.request(
            cluster.privateURL(leader, "records/changes"), method: .POST, body: ["zoneID": ["zoneName": "_defaultZone"]])
        let laterToken = try #require(later.json["syncToken"] as? String)
        func names(_ answer: TestHTTP.Answer) -> [String] {
            (answer.json["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
        }
        // The later token is at or past the write: the follower waits for its position
        // (no X-Cumulus-Min-Sequence), and nothing comes after it.
        let fromLater = try await TestHTTP.readWhenCaughtUp(
            cluster.privateURL(follower, "records/changes"), body: ["zoneID": ["zoneName": "_defaultZone"], "syncToken": laterToken])
        #expect(fromLater.status == 200, "\(fromLater.text)")
        #expect(!names(fromLater).contains("after-token"), "\(fromLater.text)")
        // The older token lists the write made after it, read as of that write: the
        // token alone only asks the follower for the token's (older) position.
        let onFollower = try await TestHTTP.readWhenCaughtUp(
            cluster.privateURL(follower, "records/changes"), body: ["zoneID": ["zoneName": "_defaultZone"], "syncToken": token],
            minSequence: written)
        #expect(onFollower.status == 200, "\(onFollower.text)")
        #expect(names(onFollower).contains("after-token"), "\(onFollower.text)")

        // A sequence the leader never made: a retryable error after the wait.
        let ahead = try await TestHTTP.request(
            cluster.privateURL(follower, "records/lookup"), method: .POST, body: ["records": [["recordName": "mine-0"]]],
            headers: ["X-Cumulus-Min-Sequence": "999999", "X-Cumulus-Max-Wait-Ms": "200"])
        #expect(ahead.status == 503)
        #expect(ahead.json["serverErrorCode"] as? String == "TRY_AGAIN_LATER")
        // The sequence's epoch goes with it: the leader's own is served, and one that is
        // not a number is refused before anything else.
        let savedWithEpoch = try await cluster.save("with-epoch", value: 1, on: leader)
        let epoch = try #require(savedWithEpoch.headers["x-cumulus-epoch"], "answers carry their node's epoch")
        let withEpoch = try await TestHTTP.request(
            cluster.privateURL(follower, "records/lookup"), method: .POST, body: ["records": [["recordName": "with-epoch"]]],
            headers: [
                "X-Cumulus-Min-Sequence": try #require(savedWithEpoch.headers["x-cumulus-sequence"]), "X-Cumulus-Min-Epoch": epoch,
                "X-Cumulus-Max-Wait-Ms": "20000",
            ])
        #expect(withEpoch.status == 200 && withEpoch.text.contains("\"with-epoch\""), "\(withEpoch.text)")
        let badEpoch = try await TestHTTP.request(
            cluster.privateURL(follower, "records/lookup"), method: .POST, body: ["records": [["recordName": "mine-0"]]],
            headers: ["X-Cumulus-Min-Sequence": "1", "X-Cumulus-Min-Epoch": "soon"])
        #expect(badEpoch.status == 400)
        #expect(badEpoch.json["serverErrorCode"] as? String == "BAD_REQUEST", "\(badEpoch.text)")

        // Lag is visible on both sides.
        let leaderStatus = try await TestHTTP.replicationGET(leader.url, "/replication/status", timeout: .seconds(30))
        let followers = leaderStatus.json["followers"] as? [[String: Any]] ?? []
        #expect(followers.first?["name"] as? String == "follower", "\(leaderStatus.text)")
        let metrics = try await TestHTTP.request(follower.url + "/metrics", headers: TestHTTP.operatorHeaders)
        #expect(metrics.text.contains("cumulus_replication_lag_commits"))
        // Streaming, once connected (a stream the busy machine dropped is reopened).
        var state: String?
        try await waitUntil("the follower to report streaming (state \(state ?? "unknown"))") {
            state = await TestHTTP.followerState(follower.url)
            return state == "streaming"
        }
        // Without a session (a handshake proving the secret), nothing.
        let anonymous = try await TestHTTP.request(leader.url + "/replication/hello")
        #expect(anonymous.status == 401)

        #expect(leader.stop() == 0)
        #expect(follower.stop() == 0)
    }

    @Test("a delete without a change tag, over HTTP to the leader, deletes there and on the follower; a stale tag conflicts")
    func deleteWithoutChangeTag() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        func item(_ answer: TestHTTP.Answer) -> [String: Any] {
            (answer.json["records"] as? [[String: Any]])?.first ?? [:]
        }
        func lookup(_ name: String, on node: NodeProcess, minSequence: String? = nil) async throws -> [String: Any] {
            let answer = try await TestHTTP.readWhenCaughtUp(
                cluster.privateURL(node, "records/lookup"), body: ["records": [["recordName": name]]], minSequence: minSequence)
            #expect(answer.status == 200, "\(answer.text)")
            return item(answer)
        }

        // As MistKit sends it: no recordChangeTag.
        #expect(try await cluster.save("untagged", value: 1, on: leader).status == 200)
        let deleted = try await cluster.modify("delete", ["recordName": "untagged"], on: leader)
        #expect(deleted.status == 200 && item(deleted)["deleted"] as? Bool == true, "\(deleted.text)")
        let sequence = try #require(deleted.headers["x-cumulus-sequence"])
        #expect(try await lookup("untagged", on: leader)["serverErrorCode"] as? String == "NOT_FOUND")
        #expect(try await lookup("untagged", on: follower, minSequence: sequence)["serverErrorCode"] as? String == "NOT_FOUND")

        // With a tag the delete is checked: a stale one conflicts and the record stays.
        let staleTag = try #require(item(try await cluster.save("tagged", value: 1, on: leader))["recordChangeTag"] as? String)
        let tag = try #require(item(try await cluster.save("tagged", value: 2, on: leader))["recordChangeTag"] as? String)
        let refused = try await cluster.modify("delete", ["recordName": "tagged", "recordChangeTag": staleTag], on: leader)
        #expect(item(refused)["serverErrorCode"] as? String == "CONFLICT", "\(refused.text)")
        #expect(try await lookup("tagged", on: leader)["recordChangeTag"] as? String == tag)
        let checked = try await cluster.modify("delete", ["recordName": "tagged", "recordChangeTag": tag], on: leader)
        #expect(item(checked)["deleted"] as? Bool == true, "\(checked.text)")
        #expect(try await lookup("tagged", on: leader)["serverErrorCode"] as? String == "NOT_FOUND")

        #expect(leader.stop() == 0)
        #expect(follower.stop() == 0)
    }

    @Test("a leader and a follower started as Docs/OPERATIONS.md says show no secret in their arguments, and keep their data private")
    func secretsStayPrivate() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        _ = try await cluster.save("one", value: 1, on: leader)
        for node in [leader, follower] {
            let pid = try #require(node.processID)
            // What `ps` and every local user read: the arguments, NUL-separated.
            let arguments = try #require(FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"))
            #expect(!String(decoding: arguments, as: UTF8.self).contains(Cluster.secret), "\(node.arguments)")
        }
        for data in ["leader", "follower"] {
            func mode(_ path: String) throws -> Int {
                try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            }
            #expect(try mode(cluster.path(data)) == 0o700, "\(data)")
            #expect(try mode(cluster.path(data) + "/data.mdb") == 0o600, "\(data): a seeded snapshot too")
            #expect(try mode(cluster.path(data) + "/lock.mdb") == 0o600, "\(data)")
        }
        for node in [leader, follower] {
            #expect(!node.stderr.contains("other local users"), "\(node.stderr)")
            #expect(!node.stderr.contains("is visible to every local user"), "\(node.stderr)")
        }
        #expect(leader.stop() == 0)
        #expect(follower.stop() == 0)
    }

    @Test("a secret given on the command line still works, with a warning that ps shows it")
    func secretArgumentWarns() async throws {
        let cluster = try Cluster()
        let leader = NodeProcess(
            ["serve", "--data", cluster.path("leader"), "--replication-secret", Cluster.secret],
            port: NodeProcess.freePort(), logDirectory: cluster.root + "/logs")
        try leader.start()
        defer { leader.kill() }
        try await TestHTTP.waitUntilUp(leader.url)
        #expect(leader.stderr.contains("--replication-secret is visible"), "\(leader.stderr)")
        #expect(leader.stop() == 0)
    }

    @Test("a follower with the wrong replication secret is refused and stops")
    func wrongSecret() async throws {
        let cluster = try Cluster()
        let leader = try await cluster.startLeader("leader", dev: false)
        let follower = cluster.follower("follower", of: leader.url, secret: "not-the-secret")
        try follower.start()
        let status = await follower.waitForExit(timeout: .seconds(60))
        #expect(status != nil && status != 0)
        #expect(follower.stderr.contains("replication secret"), "\(follower.stderr)")
        #expect(leader.stop() == 0)
    }
}
