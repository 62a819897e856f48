import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusTools
import CumulusViews
import Foundation
import Testing

@Suite("Time-travel checkpoints")
struct CheckpointTests {
    @Test("checkpoints and replays are private to their owner: directories 0700, files 0600, a finished replay 0400")
    func checkpointsAndReplaysArePrivate() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        for index in 0..<4 { try await world.save([Record.make("TodoItem", "t\(index)", in: zone)]) }
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        let directory = world.scratch("checkpoints")
        let made = try Checkpoints.build(world.store, in: directory, every: 2)
        #expect(!made.isEmpty)
        #expect(try mode(directory) == 0o700)
        for checkpoint in made {
            #expect(try mode(checkpoint.path) == 0o700)
            #expect(try mode(checkpoint.path + "/data.mdb") == 0o600)
        }
        // From a checkpoint (a copy of its file) and from the start.
        for (label, checkpoints) in [("from-checkpoint", directory), ("from-start", nil)] as [(String, String?)] {
            let out = world.scratch(label)
            _ = try Replayer.replay(world.store, through: world.head, to: out, checkpoints: checkpoints)
            #expect(try mode(out) == 0o700, "\(label)")
            #expect(try mode(out + "/data.mdb") == 0o400, "\(label)")
        }
    }

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
                try container.views.digests(in: txn)
            }
            #expect(digests == captured[point], "replay at \(point)")
            #expect(try container.store.verifyChain().isIntact)
            container.close()
        }
    }

    @Test("a checkpoint whose views an older layout made is ignored by a replay and replaced by the next build")
    func olderFormatCheckpointsAreReplaced() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone()
        for index in 0..<4 {
            try await world.save([Record.make("Note", "n\(index)", in: zone, ["body": .string("word \(index)")])])
        }
        let directory = world.scratch("checkpoints")
        #expect(try Checkpoints.build(world.store, in: directory, every: 2).map(\.sequence) == [2, 4])
        // Make the checkpoints look as a build before views format 3 left them.
        for checkpoint in Checkpoints.list(in: directory) {
            let environment = try LMDBEnvironment(path: checkpoint.path)
            let meta = try DataLayout.open(.viewsState, in: environment)
            try environment.write { txn in _ = try txn.delete(meta, key: Array("viewsFormat".utf8)) }
        }
        let result = try Replayer.replay(world.store, through: 3, to: world.scratch("out"), checkpoints: directory)
        #expect(result.checkpoint == nil, "an older checkpoint is not continued")
        #expect(try Checkpoints.build(world.store, in: directory, every: 2).map(\.sequence) == [2, 4], "rebuilt")
        let again = try Replayer.replay(world.store, through: 4, to: world.scratch("again"), checkpoints: directory)
        #expect(again.checkpoint == 4)
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
