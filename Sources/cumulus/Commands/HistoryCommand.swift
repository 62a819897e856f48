import ArgumentParser
import CumulusModel
import CumulusTools

/// `cumulus history RECORD`: every version of one record.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Every version of one record: who, when, which keys changed from what to what, tag bumps, how it ended.",
        discussion: "Reads the record history index, so it takes time proportional to the record's versions.")

    @OptionGroup var options: LogCommand.DataOptions
    @OptionGroup var scope: ScopeOptions
    @Argument(help: "The record's name.") var recordName: String

    func run() throws {
        let store = try openLog(options.data, readOnly: true)
        let location = try scope.matcher.locate(recordName, in: store)
        let history = try RecordHistory.load(location, in: store)
        print("\(location): \(history.versions.count) versions")
        for version in history.versions {
            var line = "#\(version.sequence)  \(ToolTime.iso(version.time))  \(version.user.isEmpty ? "(system)" : version.user)"
            line += "  \(version.kind)"
            if version.tagBefore != version.tagAfter {
                line += "  tag \(version.tagBefore ?? "-") → \(version.tagAfter ?? "-")"
            }
            print(line)
            if case .created = version.kind, let record = version.record {
                print("  type \(record.recordType)")
            }
            // A deletion removes every field; listing them all again says nothing new.
            if version.record == nil { continue }
            for change in version.changes { print("    \(change)") }
        }
        if history.state != nil { print("exists now") }
    }
}
