import CumulusEngine
import Logging

/// A node's life across rejoins: it serves the data directory, and when serving ends
/// with an error, its ``NodeStateMachine`` decides whether the node rejoins (the
/// directory is moved aside, never deleted, and the node serves again on an empty one,
/// seeded from the leader) or stops with that error.
///
/// One process keeps one ``NodeHistory`` through it all, so `cumulus status` shows a
/// rejoin beside the roles before and after it.
public enum NodeLoop {
    /// Serves (`serve`) until it returns, rejoining as often as the machine says;
    /// throws the error of a failure that stops the node.
    public static func run(
        data: String, mode: NodeStateMachine.Mode, history: NodeHistory, logger: Logger,
        serve: () async throws -> Void
    ) async throws {
        while true {
            do {
                return try await serve()
            } catch {
                var machine = NodeStateMachine(mode: mode)
                // A cluster member's driver has decided already; any other failure is
                // decided here, by how the node was started.
                let action = (error as? MustRejoin).map { .rejoin($0) } ?? machine.failed(.init(error))
                guard case .rejoin(let rejoin) = action else { throw error }
                let aside = try FollowerSeeder.moveAside(data, suffix: rejoin.cause.rawValue)
                history.record(
                    "rejoining", epoch: history.changes.last?.epoch ?? 0,
                    reason: "\(rejoin); the data directory was moved to \(aside)")
                logger.warning(
                    "\(rejoin); the data directory was moved to \(aside) (kept, not deleted); seeding again from a snapshot of the leader's")
            }
        }
    }
}
