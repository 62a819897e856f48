import ArgumentParser
import CumulusReplication

/// `cumulus serve`'s options for semi-synchronous commit (`Docs/OPERATIONS.md`).
struct SyncOptions: ParsableArguments {
    @Option(help: "Acknowledge a write only once this many followers hold it durably (0: asynchronous).")
    var syncReplicas = 0

    @Option(help: "Seconds a write waits for followers to connect, and then to confirm it.")
    var syncTimeout = 5.0

    @Option(help: "When followers do not confirm in time: fail (TRY_AGAIN_LATER) or async (go on, and count it).")
    var syncFallback = SyncReplication.Policy.Fallback.fail.rawValue

    /// The policy, or `nil` for asynchronous replication.
    var policy: SyncReplication.Policy? {
        guard syncReplicas > 0, let fallback = SyncReplication.Policy.Fallback(rawValue: syncFallback) else { return nil }
        return SyncReplication.Policy(
            replicas: syncReplicas, timeout: .milliseconds(Int64(syncTimeout * 1000)), fallback: fallback)
    }

    func validate() throws {
        guard (0...64).contains(syncReplicas) else { throw ValidationError("--sync-replicas is between 0 and 64") }
        guard syncTimeout > 0, syncTimeout <= 600 else { throw ValidationError("--sync-timeout is between 0 and 600 seconds") }
        guard SyncReplication.Policy.Fallback(rawValue: syncFallback) != nil else {
            throw ValidationError("--sync-fallback is fail or async")
        }
    }
}
