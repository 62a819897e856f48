import ArgumentParser
import CumulusModel
import CumulusTools

/// `cumulus show --at SEQ|TIME RECORD`: one record as it was.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print one record as it was at a sequence or time (default: now).")

    @OptionGroup var options: LogCommand.DataOptions
    @OptionGroup var scope: ScopeOptions
    @Option(help: "The point: a sequence number or an ISO-8601 time.") var at: String?
    @Argument(help: "The record's name.") var recordName: String

    func run() throws {
        let store = try openLog(options.data, readOnly: true)
        let point = try at.map { try resolvePoint($0, in: store) } ?? store.lastSequence()
        let location = try scope.matcher.locate(recordName, in: store)
        let history = try RecordHistory.load(location, in: store, through: point)
        guard let record = history.state else {
            if let last = history.versions.last {
                print("\(location) did not exist at #\(point): \(last.kind) at #\(last.sequence)")
            } else {
                print("\(location) did not exist yet at #\(point)")
            }
            throw ExitCode(1)
        }
        let version = history.versions.last
        print("\(location) at #\(point) (last changed at #\(version?.sequence ?? 0) by \(version?.user ?? "?"))")
        print("  recordType = \(record.recordType)")
        print("  recordChangeTag = \(record.recordChangeTag ?? "-")")
        if let created = record.creationDate { print("  creationDate = \(ToolTime.iso(created))") }
        if let modified = record.modificationDate { print("  modificationDate = \(ToolTime.iso(modified))") }
        for line in describeFields(record) { print(line) }
    }
}
