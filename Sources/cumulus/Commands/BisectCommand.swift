import ArgumentParser
import CumulusModel
import CumulusTools

/// `cumulus bisect --query P --type T`: the first commit that changed a query's result.
struct BisectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bisect",
        abstract: "Find the first commit after which a query's result changed as named (became non-empty, empty, changed count).")

    @OptionGroup var options: LogCommand.DataOptions
    @OptionGroup var scope: ScopeOptions
    @Option(help: "The predicate, in CloudKit's format (e.g. \"done == 1 AND priority > 2\").") var query: String
    @Option(help: "The record type.") var type: String
    @Option(help: "The change: \(BisectCondition.allCases.map(\.rawValue).joined(separator: "|")).")
    var when: String = BisectCondition.becameNonEmpty.rawValue
    @Option(help: "Only changes after this point (sequence or time).") var after: String?

    func run() throws {
        guard let condition = BisectCondition(rawValue: when) else {
            throw ValidationError("--when must be one of \(BisectCondition.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let store = try openLog(options.data, readOnly: true)
        let parsed = try PredicateParser.query(recordType: type, predicate: query)
        let start = try after.map { try resolvePoint($0, in: store) } ?? 0
        let progress = Progress(label: "bisecting", total: try store.lastSequence(), unit: "commits")
        let finding = try Bisector.search(
            store, query: parsed, scope: scope.matcher, condition: condition, after: start) { progress.update($0) }
        progress.finish()
        guard let finding else {
            print("no commit made the result \(condition.rawValue)")
            throw ExitCode(1)
        }
        print("first commit: #\(finding.sequence)  \(ToolTime.iso(finding.commit.timestamp))  by \(finding.commit.actor)  request \(finding.commit.requestID)")
        print("matching records: \(finding.countBefore) before, \(finding.countAfter) after")
        for location in finding.changed { print("  \(location)") }
        for entry in LogEntry.entries(of: finding.commit, hash: [], previousHash: []) {
            print("  " + EntryFormatter.text(entry))
        }
    }
}
