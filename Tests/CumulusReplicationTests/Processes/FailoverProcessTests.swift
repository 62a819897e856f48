import CumulusLog
import CumulusReplication
import CumulusStorage
import Foundation
import Synchronization
import Testing

/// Automatic failover through etcd, with real processes: three `cumulus serve --etcd`
/// nodes and a private etcd on loopback.
@Suite struct FailoverProcessTests {
    /// Whether `node` takes a write now.
    func takesWrites(_ cluster: Cluster, _ node: NodeProcess, _ name: String) async -> Bool {
        (try? await cluster.save(name, value: 1, on: node))?.status == 200
    }

    /// The names of `names` that `node` does not hold.
    func missing(_ cluster: Cluster, _ names: [String], on node: NodeProcess) async throws -> [String] {
        let answer = try await TestHTTP.request(
            cluster.privateURL(node, "records/lookup"), method: .POST,
            body: ["records": names.map { ["recordName": $0] }])
        let records = answer.json["records"] as? [[String: Any]] ?? []
        let held = Set(records.compactMap { $0["serverErrorCode"] == nil ? $0["recordName"] as? String : nil })
        return names.filter { !held.contains($0) }
    }

    /// Starts the cluster's first node (with development credentials, which the
    /// cluster's helpers then use) and waits until it takes writes.
    func startFirst(_ cluster: Cluster, etcd: EtcdServer) async throws -> NodeProcess {
        let a = cluster.member("a", etcd: etcd, dev: true)
        try a.start()
        try await TestHTTP.waitUntilUp(a.url)
        cluster.takeCredentials(from: a)
        try await waitUntil("the first node to take writes", timeout: .seconds(120)) {
            await takesWrites(cluster, a, "first")
        }
        return a
    }

    /// The first node, and a second that follows it and holds all it has.
    func startPair(_ cluster: Cluster, etcd: EtcdServer) async throws -> (NodeProcess, NodeProcess) {
        let a = try await startFirst(cluster, etcd: etcd)
        let b = cluster.member("b", etcd: etcd)
        try b.start()
        try await waitUntil("the second to follow the first", timeout: .seconds(120)) { await cluster.followed(b) == a.url }
        let head = try #require(await TestHTTP.head(a.url))
        try await TestHTTP.waitForHead(b.url, atLeast: head, timeout: .seconds(120))
        return (a, b)
    }

    @Test func aKilledLeaderIsReplacedAndRejoinsAsAFollower() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()

        // The first node starts the cluster's log and leads it.
        let a = try await startFirst(cluster, etcd: etcd)
        // Two more join: seeded from it, then following it.
        let b = cluster.member("b", etcd: etcd)
        let c = cluster.member("c", etcd: etcd)
        for node in [b, c] {
            try node.start()
            try await TestHTTP.waitUntilUp(node.url, timeout: .seconds(120))
        }
        try await waitUntil("both to follow the first", timeout: .seconds(120)) {
            let (fb, fc) = (await cluster.followed(b), await cluster.followed(c))
            return fb == a.url && fc == a.url
        }
        #expect(!(await takesWrites(cluster, b, "on-a-follower")), "a follower refuses writes")

        var saved = ["first"]
        for index in 0..<20 {
            let answer = try await cluster.save("before-\(index)", value: index, on: a)
            #expect(answer.status == 200, "\(answer.text)")
            saved.append("before-\(index)")
        }
        let head = try #require(await TestHTTP.head(a.url))
        try await TestHTTP.waitForHead(b.url, atLeast: head, timeout: .seconds(120))
        try await TestHTTP.waitForHead(c.url, atLeast: head, timeout: .seconds(120))

        // The leader dies. One of the others takes writes once its lease has run out.
        a.kill()
        var leader: NodeProcess?
        try await waitUntil("another node to take writes", timeout: .seconds(120)) {
            for node in [b, c] where await takesWrites(cluster, node, "after") {
                leader = node
                return true
            }
            return false
        }
        let newLeader = try #require(leader)
        let other = newLeader === b ? c : b
        saved.append("after")
        #expect(try await missing(cluster, saved, on: newLeader) == [], "everything the old leader's followers held")
        try await waitUntil("the other to follow the new leader", timeout: .seconds(120)) {
            await cluster.followed(other) == newLeader.url
        }

        // The old leader comes back: it follows the new one and catches up.
        try a.start()
        try await TestHTTP.waitUntilUp(a.url, timeout: .seconds(120))
        try await waitUntil("the old leader to follow the new one", timeout: .seconds(120)) {
            await cluster.followed(a) == newLeader.url
        }
        let answer = try await cluster.save("rejoined", value: 1, on: newLeader)
        #expect(answer.status == 200)
        saved.append("rejoined")
        let last = try #require(await TestHTTP.head(newLeader.url))
        for node in [a, other] {
            try await TestHTTP.waitForHead(node.url, atLeast: last, timeout: .seconds(120))
        }
        #expect(!(await takesWrites(cluster, a, "on-the-old-leader")), "the old leader takes no writes now")
    }

    /// What `node` makes of what the deposed leader handed out: the change token and the
    /// `X-Cumulus-Min-Sequence` from its lost tail get the expired-token answer, the token
    /// from before the fork still works and shows the new leader's write.
    func checkForkRefused(
        _ cluster: Cluster, on node: NodeProcess, forked: String, shared: String, orphan: (sequence: String, epoch: String)
    ) async throws {
        let refused = try await cluster.zoneChanges(on: node, since: forked)
        #expect(refused.json["serverErrorCode"] as? String == "CHANGE_TOKEN_EXPIRED", "\(node.url): \(refused.text)")
        let lookup = try await TestHTTP.request(
            cluster.privateURL(node, "records/lookup"), method: .POST, body: ["records": [["recordName": "first"]]],
            headers: ["X-Cumulus-Min-Sequence": orphan.sequence, "X-Cumulus-Min-Epoch": orphan.epoch])
        #expect(lookup.json["serverErrorCode"] as? String == "CHANGE_TOKEN_EXPIRED", "\(node.url): \(lookup.text)")
        let served = try await cluster.zoneChanges(on: node, since: shared)
        #expect(served.status == 200, "\(node.url): \(served.text)")
        let names = (served.json["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
        #expect(names.contains("after-failover") && !names.contains("orphan"), "\(node.url): \(names)")
    }

    @Test func aDeposedLeaderWithADivergedTailMovesItAsideAndRejoins() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()
        let (a, b) = try await startPair(cluster, etcd: etcd)
        // A client's place in the history both nodes share.
        let shared = try await cluster.syncToken(on: a)

        // The follower goes away; the leader writes what it never gets, hands out a
        // token and a sequence that cover it, and dies.
        b.kill()
        let saved = try await cluster.save("orphan", value: 1, on: a)
        #expect(saved.status == 200)
        let orphan = (
            sequence: try #require(saved.headers["x-cumulus-sequence"]), epoch: try #require(saved.headers["x-cumulus-epoch"])
        )
        let forked = try await cluster.syncToken(on: a)
        a.kill()
        // The follower comes back, outlives the dead leader's lease, and leads: its
        // next commit takes the orphan's place.
        try b.start()
        try await waitUntil("the second node to take writes", timeout: .seconds(120)) {
            await takesWrites(cluster, b, "after-failover")
        }
        try await checkForkRefused(cluster, on: b, forked: forked, shared: shared, orphan: orphan)

        // The old leader returns: its log went past the fork, so it moves it aside and
        // is seeded anew from the leader. (Until then it follows with its old log, which
        // already holds as many commits: wait for the move, not for a head.)
        try a.start()
        func aside() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: cluster.root).filter { $0.hasPrefix("a.diverged-") }
        }
        try await waitUntil("the old leader to move its diverged log aside", timeout: .seconds(120)) { try aside().count == 1 }
        #expect(a.stdout.contains("was moved to \(cluster.path("a")).diverged-") || a.stderr.contains("was moved to"))
        try await waitUntil("the old leader, seeded anew, to hold the new leader's writes", timeout: .seconds(120)) {
            guard await cluster.followed(a) == b.url else { return false }
            return (try? await missing(cluster, ["first", "after-failover"], on: a)) == []
        }
        #expect(try await missing(cluster, ["orphan"], on: a) == ["orphan"], "the diverged write is not in its new log")
        // The node that handed them out now refuses them too.
        try await checkForkRefused(cluster, on: a, forked: forked, shared: shared, orphan: orphan)
        #expect(a.isRunning)
    }

    @Test func aFrozenLeaderIsReplacedAndAcknowledgesNothingWhenItWakes() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()
        let ttl = ["--lease-ttl", "2"]
        let a = cluster.member("a", etcd: etcd, dev: true, extra: ttl)
        try a.start()
        try await TestHTTP.waitUntilUp(a.url)
        cluster.takeCredentials(from: a)
        try await waitUntil("the first node to take writes", timeout: .seconds(120)) {
            await takesWrites(cluster, a, "first")
        }
        let b = cluster.member("b", etcd: etcd, extra: ttl)
        try b.start()
        try await waitUntil("the second to follow the first", timeout: .seconds(120)) { await cluster.followed(b) == a.url }

        // Frozen past its lease: writes sent to it meanwhile wait in its sockets.
        a.pause()
        let sentWhileFrozen = (0..<3).map { index in
            Task { try? await cluster.save("frozen-\(index)", value: index, on: a, timeout: .seconds(120)) }
        }
        try await waitUntil("the other node to take writes", timeout: .seconds(120)) {
            await takesWrites(cluster, b, "after")
        }
        a.resume()
        // Awake, it finds its lease gone: the waiting writes are not acknowledged (they
        // may be in its log, as a tail the new leader lacks), nor is anything after.
        for write in sentWhileFrozen {
            let answer = await write.value
            #expect(answer?.status != 200, "a write acknowledged by the deposed leader: \(answer?.text ?? "")")
        }
        for index in 0..<5 {
            let answer = try? await cluster.save("woken-\(index)", value: index, on: a, timeout: .seconds(30))
            #expect(answer?.status != 200, "a write acknowledged by the deposed leader: \(answer?.text ?? "")")
        }
        // It rejoins as a follower (its diverged tail, if any, moved aside) and catches up.
        try await waitUntil("the old leader to follow the new one and hold its writes", timeout: .seconds(120)) {
            guard await cluster.followed(a) == b.url else { return false }
            return (try? await missing(cluster, ["first", "after"], on: a)) == []
        }
        let aside = try FileManager.default.contentsOfDirectory(atPath: cluster.root).filter { $0.hasPrefix("a.diverged-") }
        if !aside.isEmpty { #expect(a.stdout.contains("was moved to") || a.stderr.contains("was moved to")) }
        // Each node's history says when it led and, for the old leader, when and why it
        // stopped; it lives as long as the process, so a rejoin does not erase it.
        func history(_ node: NodeProcess) async throws -> [[String: Any]] {
            try await TestHTTP.replicationGET(node.url, "/replication/status", timeout: .seconds(30)).json["history"]
                as? [[String: Any]] ?? []
        }
        let old = try await history(a)
        let led = old.lastIndex { $0["role"] as? String == "leader" }
        #expect(led != nil, "\(old)")
        #expect((led.map { old[$0]["reason"] as? String } ?? nil)?.hasPrefix("won the election") == true, "\(old)")
        let after = led.map { Array(old[($0 + 1)...]) } ?? []
        #expect(!after.isEmpty && after.allSatisfy { ($0["reason"] as? String)?.isEmpty == false }, "\(old)")
        #expect(after.last?["role"] as? String == "follower" && after.last?["leaderURL"] as? String == b.url, "\(old)")
        let new = try await history(b)
        #expect(new.last?["role"] as? String == "leader", "\(new)")
        #expect((new.last?["reason"] as? String)?.hasPrefix("won the election") == true, "\(new)")
    }

    @Test func aStoppedLeaderHandsOverAtOnce() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()
        let (a, b) = try await startPair(cluster, etcd: etcd)

        // Each node's status names the cluster, itself, and the lease's holder.
        for (node, name) in [(a, "a"), (b, "b")] {
            let status = try await TestHTTP.replicationGET(node.url, "/replication/status", timeout: .seconds(30))
            let view = status.json["cluster"] as? [String: Any]
            #expect(view?["name"] as? String == "test")
            #expect(view?["node"] as? String == name)
            #expect((view?["leader"] as? [String: Any])?["node"] as? String == "a")
            #expect((view?["leader"] as? [String: Any])?["url"] as? String == a.url)
        }
        // SIGTERM: the leader resigns as it stops, revoking its lease; the other need
        // not wait for it to run out.
        #expect(a.stop() == 0)
        #expect(a.stdout.contains("Cumulus stopped cleanly"))
        try await waitUntil("the second node to take writes", timeout: .seconds(120)) {
            await takesWrites(cluster, b, "after")
        }
        #expect(try await missing(cluster, ["first", "after"], on: b) == [])
    }

    @Test func clusterOptionsAreChecked() async throws {
        let cluster = try Cluster()
        let secret = ["--replication-secret-file", cluster.secretFile]
        let base = ["--etcd", "http://127.0.0.1:1", "--cluster", "c", "--node", "n", "--advertise", "http://127.0.0.1:2"]
        #expect(await cluster.refusal(base)?.contains("--etcd needs the replication secret") == true)
        #expect(await cluster.refusal(secret + base + ["--follow", "http://x:1"])?.contains("does not go with --follow") == true)
        #expect(await cluster.refusal(secret + ["--etcd", "http://127.0.0.1:1", "--node", "n", "--advertise", "http://a:1"])?
            .contains("--cluster NAME") == true)
        #expect(await cluster.refusal(secret + ["--etcd", "http://127.0.0.1:1", "--cluster", "c/d", "--node", "n", "--advertise", "http://a:1"])?
            .contains("--cluster NAME") == true)
        #expect(await cluster.refusal(secret + ["--etcd", "http://127.0.0.1:1", "--cluster", "c", "--advertise", "http://a:1"])?
            .contains("--node NAME") == true)
        #expect(await cluster.refusal(secret + ["--etcd", "http://127.0.0.1:1", "--cluster", "c", "--node", "n"])?
            .contains("--advertise URL") == true)
        #expect(await cluster.refusal(secret + ["--cluster", "c"])?.contains("belong with --etcd") == true)
        #expect(await cluster.refusal(secret + ["--etcd", "127.0.0.1:2379", "--cluster", "c", "--node", "n", "--advertise", "http://a:1"])?
            .contains("etcd client URLs") == true)
    }
}

/// Ten leader kills under a steady write load with `--sync-replicas 1`: the issue's
/// acceptance test for failover without losing an acknowledged write.
@Suite struct FailoverUnderLoadProcessTests {
    /// Writers that find the leader by themselves (following `NOT_LEADER`'s `leaderURL`,
    /// moving to the next node when one does not answer) and note every save that was
    /// acknowledged.
    final class ClusterLoad: Sendable {
        let acknowledged = Mutex<[String]>([])
        let control = LoadControl()

        func run(_ cluster: Cluster, _ nodes: [NodeProcess], writers: Int = 4) async {
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var target = 0
                        var index = 0
                        while !self.control.isStopped {
                            index += 1
                            let name = "load-\(writer)-\(index)"
                            let node = nodes[target % nodes.count]
                            // A short deadline: the HTTP client queues a request to a dead
                            // node until its connect timeout (10 s) otherwise.
                            guard let answer = try? await cluster.save(name, value: index, on: node, timeout: .seconds(1))
                            else {
                                target += 1
                                try? await Task.sleep(for: .milliseconds(20))
                                continue
                            }
                            if answer.status == 200 {
                                self.acknowledged.withLock { $0.append(name) }
                                self.control.countSave()
                                continue
                            }
                            if let leader = answer.json["leaderURL"] as? String,
                                let next = nodes.firstIndex(where: { $0.url == leader })
                            {
                                target = next
                            } else {
                                target += 1
                            }
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
        }
    }

    @Test func tenLeaderKillsUnderLoadLoseNoAcknowledgedWrite() async throws {
        let etcd = try await EtcdServer()
        let cluster = try Cluster()
        func member(_ name: String, dev: Bool = false) -> NodeProcess {
            cluster.member(
                name, etcd: etcd, name: "load", dev: dev,
                extra: ["--lease-ttl", "2", "--sync-replicas", "1", "--sync-timeout", "5"])
        }
        let nodes = [member("a", dev: true), member("b"), member("c")]
        try nodes[0].start()
        try await TestHTTP.waitUntilUp(nodes[0].url, timeout: .seconds(120))
        cluster.takeCredentials(from: nodes[0])
        for node in nodes.dropFirst() {
            try node.start()
            try await TestHTTP.waitUntilUp(node.url, timeout: .seconds(120))
        }

        /// The node that takes writes now (its replication status says leader).
        func leader() async -> NodeProcess? {
            for node in nodes {
                let answer = try? await TestHTTP.replicationGET(node.url, "/replication/status")
                if answer?.status == 200, answer?.json["role"] as? String == "leader" { return node }
            }
            return nil
        }

        let load = ClusterLoad()
        let writing = Task { await load.run(cluster, nodes) }
        // Should an expectation throw, the load stops and the nodes go with the test
        // (the load's task holds the cluster, which would otherwise never kill them).
        defer {
            load.control.stop()
            for node in nodes { node.kill() }
        }
        var outages: [Duration] = []
        for kill in 1...10 {
            // A leader serving the load.
            let before = load.control.saves
            try await waitUntil("writes to land before kill \(kill)", timeout: .seconds(120)) {
                load.control.saves >= before + 20
            }
            var current: NodeProcess?
            try await waitUntil("a leader before kill \(kill)", timeout: .seconds(120)) {
                current = await leader()
                return current != nil
            }
            let victim = try #require(current)
            victim.kill()
            let killed = ContinuousClock.now
            let landed = load.control.saves
            do {
                try await waitUntil("another leader to take writes after kill \(kill)", timeout: .seconds(120)) {
                    load.control.saves > landed + 5
                }
            } catch {
                for node in nodes { print("==== \(node.url)\n\(node.stderr.suffix(6000))") }
                throw error
            }
            outages.append(ContinuousClock.now - killed)
            // Back it comes: as a follower, or moving a diverged tail aside first.
            try victim.start()
        }
        load.control.stop()
        await writing.value
        print("failover under load: \(outages.count) kills, outages \(outages.map { "\($0)" })")

        // Convergence: every node up, following or leading, at the leader's head.
        var last: NodeProcess?
        try await waitUntil("a leader after the kills", timeout: .seconds(120)) {
            last = await leader()
            return last != nil
        }
        let finalLeader = try #require(last)
        let head = try #require(await TestHTTP.head(finalLeader.url))
        for node in nodes where node !== finalLeader {
            try await waitUntil("\(node.url) to reach the leader's head \(head)", timeout: .seconds(180)) {
                (await TestHTTP.head(node.url) ?? 0) >= head
            }
        }

        // No acknowledged write is missing on the leader.
        let names = load.acknowledged.withLock { $0 }
        #expect(names.count > 100)
        var missing: [String] = []
        for start in stride(from: 0, to: names.count, by: 100) {
            let batch = Array(names[start..<min(names.count, start + 100)])
            let answer = try await TestHTTP.request(
                cluster.privateURL(finalLeader, "records/lookup"), method: .POST,
                body: ["records": batch.map { ["recordName": $0] }])
            let records = answer.json["records"] as? [[String: Any]] ?? []
            let held = Set(records.compactMap { $0["serverErrorCode"] == nil ? $0["recordName"] as? String : nil })
            missing += batch.filter { !held.contains($0) }
        }
        #expect(missing.isEmpty, "acknowledged but missing: \(missing.prefix(20)) (\(missing.count) of \(names.count))")

        // Every node's log is the leader's, hash by hash. The leader stops last: stopped
        // first, it would resign, and another node would lead on and begin an epoch of
        // its own with a commit the stopped leader never gets.
        for node in nodes where node !== finalLeader { #expect(node.stop() == 0, "\(node.stderr.suffix(2000))") }
        #expect(finalLeader.stop() == 0, "\(finalLeader.stderr.suffix(2000))")
        func chain(_ name: String) throws -> [[UInt8]] {
            var options = LMDBEnvironment.Options()
            options.readOnly = true
            let store = try LogStore(environment: try LMDBEnvironment(path: cluster.path(name), options: options))
            return try (1...store.head.sequence).map { try #require(try store.chainHash(at: $0)) }
        }
        let leaderName = (finalLeader.arguments.firstIndex(of: "--node").map { finalLeader.arguments[$0 + 1] }) ?? "a"
        let reference = try chain(leaderName)
        for name in ["a", "b", "c"] where name != leaderName {
            let hashes = try chain(name)
            #expect(hashes.count <= reference.count)
            #expect(Array(reference.prefix(hashes.count)) == hashes, "\(name)'s log is not a prefix of \(leaderName)'s")
        }
    }
}
