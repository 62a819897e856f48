import ArgumentParser
import CumulusTools

/// `cumulus checkpoint`: derived view checkpoints that make `replay --at` quick.
struct CheckpointCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Add replay checkpoints every N commits (derived from the log; delete them any time).",
        discussion: """
            Each is what `replay --at S` would write, kept under DATA/checkpoints/; later runs start from the
            newest, so keeping them current costs only the new commits. `replay` starts from the latest one
            at or before its point.
            """)

    @OptionGroup var options: LogCommand.DataOptions
    @Option(help: "Commits between checkpoints.") var every: UInt64 = 100_000
    @Option(help: "Where to keep them (default: DATA/checkpoints).") var directory: String?

    func run() throws {
        let store = try openLog(options.data, readOnly: true)
        let target = directory ?? Checkpoints.defaultDirectory(forData: options.data)
        let progress = Progress(label: "checkpointing", total: try store.lastSequence(), unit: "commits")
        let made = try Checkpoints.build(store, in: target, every: every) { progress.update($0) }
        progress.finish()
        print(made.isEmpty ? "checkpoints are up to date" : "made checkpoints at " + made.map { "#\($0.sequence)" }.joined(separator: ", "))
    }
}
