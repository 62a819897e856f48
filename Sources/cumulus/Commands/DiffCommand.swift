import ArgumentParser
import CumulusModel
import CumulusTools

/// `cumulus diff A B`: what changed between two points.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "What changed between two points (sequences or times): records created, deleted (with causes), changed.")

    @OptionGroup var options: LogCommand.DataOptions
    @OptionGroup var scope: ScopeOptions
    @Argument(help: "The first point.") var from: String
    @Argument(help: "The second point.") var to: String

    func run() throws {
        let store = try openLog(options.data, readOnly: true)
        let a = try resolvePoint(from, in: store)
        let b = try resolvePoint(to, in: store)
        let differences = try StateDiff.between(a, b, in: store, scope: scope.matcher)
        print("#\(a) → #\(b): \(differences.count) records differ")
        for difference in differences {
            let name = "\(difference.location.recordID) (\(difference.recordType)) in \(difference.location.database)"
            switch difference.kind {
            case .created:
                print("+ \(name)  created")
            case .deleted(let cause):
                print("- \(name)  \(cause) at #\(difference.lastSequence)")
                continue
            case .changed:
                print("~ \(name)  tag \(difference.tagBefore ?? "-") → \(difference.tagAfter ?? "-")")
            }
            for change in difference.changes { print("    \(change)") }
        }
    }
}
