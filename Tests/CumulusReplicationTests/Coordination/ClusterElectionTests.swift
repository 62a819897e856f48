@testable import CumulusReplication
import Foundation
import Logging
import Testing

/// Leader election through a real etcd: several nodes in one process, each with its own
/// client and driver, as separate servers would have.
@Suite struct ClusterElectionTests {
    /// A node taking part in the election until `stop()`.
    final class Node: Sendable {
        let election: ClusterElection
        let client: EtcdClient
        let task: Task<Void, Never>

        /// Timing as a deployment's (5 s leases, requests answered within 2 s), so a
        /// loaded machine slows the election but does not make it flap.
        init(
            _ name: String, etcd: EtcdServer, cluster: String, ttl: Duration = .seconds(5), knownEpoch: UInt64 = 0,
            head: UInt64 = 1
        ) {
            client = EtcdClient(endpoints: [etcd.clientURL], requestTimeout: .seconds(2))
            var logger = Logger(label: "test.\(name)")
            logger.logLevel = .critical
            election = ClusterElection(
                client: client, keys: ClusterKeys(cluster: cluster)!,
                configuration: LeaderElection.Configuration(node: name, url: "http://\(name):8765", ttl: ttl),
                progress: { (knownEpoch, head) }, logger: logger)
            let election = self.election
            task = Task { await election.run() }
        }

        /// Resigns (as a node shutting down does) and waits until it has.
        func stop() async {
            task.cancel()
            await task.value
            await client.shutdown()
        }

        var role: LeaderElection.Role { get async { await election.role } }
    }

    static func leader(_ role: LeaderElection.Role) -> ClusterLeader? {
        if case .leader(let leader) = role { return leader }
        return nil
    }

    @Test func oneOfThreeLeadsAndTheOthersFollowIt() async throws {
        let etcd = try await EtcdServer()
        let nodes = ["a", "b", "c"].map { Node($0, etcd: etcd, cluster: "three") }
        var roles: [LeaderElection.Role] = []
        try await waitUntil("one leader followed by the others; roles \(roles)", timeout: .seconds(120)) {
            roles = []
            for node in nodes { roles.append(await node.role) }
            let leaders = roles.compactMap(Self.leader)
            guard leaders.count == 1, let leader = leaders.first else { return false }
            return roles.allSatisfy { $0 == .leader(leader) || $0 == .follower(leader) }
        }
        let leader = try #require(roles.compactMap(Self.leader).first)
        // Epoch 1 on an idle machine; on a loaded one a leader that could not renew in
        // time gives way, and a later epoch leads.
        #expect(leader.epoch >= 1)
        for (node, role) in zip(nodes, roles) where Self.leader(role) == nil {
            #expect(!node.election.fence.mayAcknowledge(), "only the leader acknowledges")
        }
        let client = EtcdClient(endpoints: [etcd.clientURL])
        #expect(try await client.get("/cumulus/three/epoch").value?.value == Array(String(leader.epoch).utf8))
        let key = try #require(try await client.get("/cumulus/three/leader").value)
        #expect(try ClusterLeader.decode(key.value) == leader)
        await client.shutdown()
        for node in nodes { await node.stop() }
    }

    @Test func whenTheLeaderStopsAnotherLeadsInTheNextEpoch() async throws {
        let etcd = try await EtcdServer()
        let nodes = ["a", "b", "c"].map { Node($0, etcd: etcd, cluster: "handover") }
        var first: ClusterLeader?
        var leading: Node?
        try await waitUntil("a first leader", timeout: .seconds(120)) {
            for node in nodes where node.election.fence.mayAcknowledge() {
                first = Self.leader(await node.role)
                leading = node
            }
            return first != nil
        }
        let old = try #require(leading)
        await old.stop()
        #expect(!old.election.fence.mayAcknowledge(), "a stopped leader acknowledges nothing")

        let rest = nodes.filter { $0 !== old }
        var second: ClusterLeader?
        try await waitUntil("a new leader among the other two", timeout: .seconds(120)) {
            second = nil
            for node in rest { if let leader = Self.leader(await node.role) { second = leader } }
            return second != nil
        }
        #expect(second?.node != first?.node)
        #expect((second?.epoch ?? 0) > (first?.epoch ?? .max), "a new leader, a new epoch")
        try await waitUntil("the other to follow the new leader", timeout: .seconds(120)) {
            var following = 0
            for node in rest where await node.role == .follower(second!) { following += 1 }
            return following == 1
        }
        for node in rest { await node.stop() }
    }

    @Test func aLeaderCutOffFromEtcdStopsAcknowledgingBeforeItsLeaseCanEnd() async throws {
        let etcd = try await EtcdServer()
        let node = Node("solo", etcd: etcd, cluster: "cut")
        try await waitUntil("the node to lead", timeout: .seconds(120)) { node.election.fence.mayAcknowledge() }
        let granted = try #require(node.election.fence.acknowledgeUntil)

        etcd.pause()
        let paused = ContinuousClock.now
        // Whatever the scheduling, its last granted renewal was sent before the pause, so
        // by the pause plus one TTL (5 s) the fence must be shut, a margin before etcd
        // could end the lease.
        #expect(granted <= paused + .seconds(5))
        try await Task.sleep(until: paused + .seconds(5), clock: .continuous)
        #expect(!node.election.fence.mayAcknowledge())
        let shutAt = node.election.fence.acknowledgeUntil
        #expect(shutAt == nil || shutAt! <= paused + .seconds(5))

        etcd.resume()
        // Its old lease ran out while etcd slept; it wins again, in a new epoch.
        try await waitUntil("the node to lead again after etcd returns", timeout: .seconds(120)) {
            if let leader = Self.leader(await node.role), leader.epoch >= 2 { return node.election.fence.mayAcknowledge() }
            return false
        }
        await node.stop()
    }

    @Test func aRestartedNodeWaitsOutItsOldKeyAndTakesANewEpoch() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        // What a node that crashed while leading in epoch 1 leaves: the counter, and its
        // key under a lease nobody renews any more.
        try await client.put("/cumulus/restart/epoch", Array("1".utf8))
        let before = ClusterLeader(node: "a", url: "http://a:8765", epoch: 1)
        let old = try await client.putUnderNewLease("/cumulus/restart/leader", before.encoded, ttl: .seconds(3))

        let node = Node("a", etcd: etcd, cluster: "restart", knownEpoch: 1)
        // While the old key stands, the node must not lead by it.
        while try await client.get("/cumulus/restart/leader").value?.lease == old {
            #expect(!node.election.fence.mayAcknowledge())
            #expect(Self.leader(await node.role) == nil)
            try await Task.sleep(for: .milliseconds(100))
        }
        try await waitUntil("the node to lead in a new epoch", timeout: .seconds(120)) {
            (Self.leader(await node.role)?.epoch ?? 0) >= 2
        }
        #expect(node.election.fence.mayAcknowledge())
        await node.stop()
        #expect(try await client.get("/cumulus/restart/leader").value == nil, "stopping gave the key up")
        await client.shutdown()
    }

    @Test func aCandidateDefersToALiveNodeWhoseLogIsFurtherOn() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        // A node that holds more of the log, alive (its record under a renewed lease)
        // but not campaigning yet.
        let ahead = ClusterNode(node: "ahead", url: "http://ahead:8765", epoch: 2, head: 10)
        let lease = try await client.putUnderNewLease("/cumulus/defer/nodes/ahead", ahead.encoded, ttl: .seconds(60))
        let node = Node("behind", etcd: etcd, cluster: "defer", knownEpoch: 2, head: 9)
        try await waitUntil("the node to publish its own record", timeout: .seconds(120)) {
            try await client.get("/cumulus/defer/nodes/behind").value.flatMap { ClusterNode.decode($0.value) }
                == ClusterNode(node: "behind", url: "http://behind:8765", epoch: 2, head: 9)
        }
        // It has campaigned (and deferred) several times by now; none may have won.
        for _ in 0..<10 {
            #expect(try await client.get("/cumulus/defer/leader").value == nil)
            #expect(!node.election.fence.mayAcknowledge())
            try await Task.sleep(for: .milliseconds(100))
        }
        // The node ahead goes away: its record with its lease. Then this one leads.
        try await client.revoke(lease)
        try await waitUntil("the node to lead once nobody is ahead", timeout: .seconds(120)) {
            node.election.fence.mayAcknowledge()
        }
        await node.stop()
        await client.shutdown()
    }

    @Test func aNewerEpochCountsBeforeALongerLog() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        // A deposed leader's diverged tail: longer, in an older epoch.
        let stale = ClusterNode(node: "old", url: "http://old:8765", epoch: 1, head: 100)
        _ = try await client.putUnderNewLease("/cumulus/epochs/nodes/old", stale.encoded, ttl: .seconds(60))
        let node = Node("new", etcd: etcd, cluster: "epochs", knownEpoch: 2, head: 50)
        try await waitUntil("the node in the newer epoch to lead", timeout: .seconds(120)) {
            node.election.fence.mayAcknowledge()
        }
        #expect(ClusterNode(node: "a", url: "u", epoch: 3, head: 1).isAhead(ofEpoch: 2, head: 99))
        #expect(!ClusterNode(node: "a", url: "u", epoch: 2, head: 5).isAhead(ofEpoch: 2, head: 5), "a tie defers to nobody")
        await node.stop()
        await client.shutdown()
    }

    @Test func anEmptyLogLeadsOnlyANewCluster() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        // A new cluster: the first node may start its log.
        let first = Node("first", etcd: etcd, cluster: "fresh", head: 0)
        try await waitUntil("an empty node to lead a new cluster", timeout: .seconds(120)) { first.election.fence.mayAcknowledge() }
        await first.stop()
        // Now the cluster has had a leader: an empty node must not start a second log.
        let empty = Node("empty", etcd: etcd, cluster: "fresh", knownEpoch: 0, head: 0)
        try await waitUntil("the empty node to publish its record", timeout: .seconds(120)) {
            try await client.get("/cumulus/fresh/nodes/empty").value != nil
        }
        for _ in 0..<10 {
            #expect(try await client.get("/cumulus/fresh/leader").value == nil)
            #expect(!empty.election.fence.mayAcknowledge())
            try await Task.sleep(for: .milliseconds(100))
        }
        await empty.stop()
        await client.shutdown()
    }

    @Test func clusterAndNodeNamesAreChecked() {
        #expect(ClusterKeys(cluster: "prod-eu.1_a") != nil)
        #expect(ClusterKeys(cluster: "") == nil)
        #expect(ClusterKeys(cluster: "a/b") == nil)
        #expect(ClusterKeys(cluster: String(repeating: "x", count: 65)) == nil)
        #expect(ClusterKeys(cluster: "prod")?.leader == "/cumulus/prod/leader")
    }
}
