import ArgumentParser
import CumulusTools

/// `cumulus replay --at SEQ|TIME --out DIR2`: time travel into a read-only directory.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Write a read-only data directory holding the state as of a sequence or time.",
        discussion: """
            The new directory holds the log up to that commit, frame for frame (same log ID and chain),
            and views rebuilt from it. Serve it with `cumulus serve --read-only --data DIR2`.
            """)

    @OptionGroup var options: LogCommand.DataOptions
    @Option(help: "The point: a sequence number or an ISO-8601 time (the last commit at or before it).") var at: String
    @Option(help: "The directory to create (must not exist or be empty).") var out: String
    @Option(help: "Checkpoints to start from (default: DATA/checkpoints, when present).") var checkpoints: String?
    @Flag(help: "Replay every commit from the first, ignoring checkpoints.") var noCheckpoints = false

    func run() throws {
        let store = try openLog(options.data, readOnly: true)
        let point = try resolvePoint(at, in: store)
        let directory = noCheckpoints ? nil : checkpoints ?? Checkpoints.defaultDirectory(forData: options.data)
        let progress = Progress(label: "replaying", total: point, unit: "commits")
        let result = try Replayer.replay(store, through: point, to: out, checkpoints: directory) { progress.update($0) }
        progress.finish()
        let from = result.checkpoint.map { " (from the checkpoint at #\($0))" } ?? ""
        print("replayed \(result.sequence) commits into \(result.path)\(from), read-only")
    }
}
