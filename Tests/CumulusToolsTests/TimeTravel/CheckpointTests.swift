import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTools
import CumulusViews
import Foundation
import Testing

@Suite("Time-travel checkpoints")
struct CheckpointTests {
    @Test("a replay from a checkpoint equals the state captured right after commit N")
    func replayFromCheckpointEqualsCapturedState() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        var captured: [UInt64: [ViewDigest]] = [:]
        for index in 0..<9 {
            try await world.save([Record.make("TodoItem", "t\(index % 4)", in: zone, ["n": .int64(Int64(index))])])
            captured[world.head] = try world.digests()
        }
        let directory = world.scratch("checkpoints")
        let made = try Checkpoints.build(world.store, in: directory, every: 3)
        #expect(made.map(\.sequence) == [3, 6, 9])
        // Up to date: nothing more to make.
        #expect(try Checkpoints.build(world.store, in: directory, every: 3).isEmpty)

        for point: UInt64 in [2, 5, 7, 9, 10] where point <= world.head {
            let out = world.scratch("replay-\(point)")
            let result = try Replayer.replay(world.store, through: point, to: out, checkpoints: directory)
            #expect(result.checkpoint == (point >= 3 ? point / 3 * 3 : nil))
            let container = try Container(path: out, environmentOptions: LMDBEnvironment.Options(mapSize: 1 << 30, readOnly: true))
            let digests = try container.store.environment.read { txn in
                try container.views.tables.all.map { try ViewDigest.of($0, in: txn) }
            }
            #expect(digests == captured[point], "replay at \(point)")
            #expect(try container.store.verifyChain().isIntact)
            container.close()
        }
    }

    @Test("a checkpoint of another log is ignored")
    func foreignCheckpointsAreIgnored() async throws {
        let world = try ToolWorld()
        let other = try ToolWorld("other")
        for target in [world, other] {
            let zone = try await target.makeZone()
            for index in 0..<4 { try await target.save([Record.make("Note", "n\(index)", in: zone)]) }
        }
        let directory = world.scratch("checkpoints")
        try Checkpoints.build(other.store, in: directory, every: 2)
        let result = try Replayer.replay(world.store, through: 4, to: world.scratch("out"), checkpoints: directory)
        #expect(result.checkpoint == nil)
        #expect(cumulusError { _ = try Checkpoints.build(world.store, in: directory, every: 0) }?.code == .invalidArguments)
    }
}
