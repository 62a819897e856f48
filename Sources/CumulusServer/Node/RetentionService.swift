import CumulusReplication
import ServiceLifecycle

/// Log retention as a service of the node's group: it ends with the node.
struct RetentionService: Service {
    let retention: LogRetention

    func run() async throws {
        await cancelWhenGracefulShutdown { await retention.run() }
    }
}
