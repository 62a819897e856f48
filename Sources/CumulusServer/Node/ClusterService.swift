import CumulusReplication
import ServiceLifecycle

/// A cluster member's election and replication as a service of the node's group:
/// stopping it resigns, so another node can lead at once.
struct ClusterService: Service {
    let member: ClusterMember

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await member.run() }
    }
}
