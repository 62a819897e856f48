import CumulusReplication
import ServiceLifecycle

/// A follower's replication loop as a service of the node's service group.
struct FollowerService: Service {
    let follower: ReplicaFollower

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await follower.run() }
    }
}
