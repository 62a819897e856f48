import CumulusEngine
import Logging
import ServiceLifecycle

/// Asset collection as a service of the node's group: a round every interval,
/// each logged when it deleted something.
struct AssetCollectionService: Service {
    let collector: AssetCollector
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let logger = logger
        await cancelWhenGracefulShutdown {
            await collector.run(
                every: interval,
                onReport: { report in
                    guard !report.collected.isEmpty || report.abandonedUploads > 0 else { return }
                    logger.info(
                        "asset collection: deleted \(report.collected.count) unreferenced files and \(report.abandonedUploads) abandoned uploads; kept \(report.referenced) referenced, \(report.young) within the grace")
                },
                onFailure: { logger.warning("asset collection failed: \($0)") })
        }
    }
}
