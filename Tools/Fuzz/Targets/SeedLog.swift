import CumulusLog
import CumulusReplication

/// A small real log, made by sending the API seeds to a fresh container: its
/// stored frames, its commits' bytes and the leader configuration a follower
/// would receive, to seed the log and replication targets with what a leader sends.
struct SeedLog {
    var frames: [[UInt8]]
    var commits: [[UInt8]]
    var configuration: ReplicatedConfiguration

    static func make() async throws -> SeedLog {
        let world = try FuzzWorld(label: "seeds")
        for seed in APIRequestTarget.seeds() {
            let newline = seed.firstIndex(of: 0x0A) ?? seed.endIndex
            _ = await world.post(String(decoding: seed[..<newline], as: UTF8.self), Array(seed.dropFirst(newline + 1)))
        }
        let store = world.container.store
        let frames = try store.rawFrames(from: 1, limit: 1_000, maxBytes: .max)
        let commits = try store.range(from: 1).map { try CommitCodec.encode($0) }
        let configuration = try ReplicatedConfiguration.read(from: store.logEnvironment)
        return SeedLog(frames: frames, commits: commits, configuration: configuration)
    }
}
