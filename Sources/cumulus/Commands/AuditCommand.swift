import ArgumentParser
import CumulusModel
import CumulusStorage
import CumulusTools
import Foundation

/// `cumulus audit export|verify`.
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Export the log's events for audit, and verify an export.",
        subcommands: [Export.self, Verify.self])

    /// `cumulus audit export`
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Every event in range, one line each, as JSON Lines or CSV (never field values).")
        @OptionGroup var options: LogCommand.DataOptions
        @OptionGroup var scope: ScopeOptions
        @Option(help: "jsonl or csv.") var format: String = AuditFormat.jsonl.rawValue
        @Option(help: "First commit: a sequence or an ISO-8601 time.") var from: String?
        @Option(help: "Last commit: a sequence or an ISO-8601 time.") var to: String?
        @Option(help: "Only commits by this user.") var user: String?
        @Option(help: "Only events of this record type.") var type: String?
        @Option(help: "Write here instead of standard output.") var out: String?

        func run() throws {
            guard let format = AuditFormat(rawValue: format) else {
                throw ValidationError("--format must be jsonl or csv")
            }
            let store = try openLog(options.data, readOnly: true)
            var filter = LogFilter(scope: scope.matcher, user: user, recordType: type)
            if let from {
                filter.from = max(try resolvePoint(from, in: store), 1)
            } else if store.firstRetained > 1 {
                // Retention dropped the first commits: the export covers what is kept.
                filter.from = store.firstRetained
                FileHandle.standardError.write(Data(
                    "the log starts at commit \(filter.from) (retention dropped the earlier ones); exporting from there\n".utf8))
            }
            if let to { filter.through = try resolvePoint(to, in: store) }
            let handle: FileHandle
            if let out {
                // An export holds every record's values: private to its owner, as the data is.
                guard
                    FileManager.default.createFile(
                        atPath: out, contents: nil, attributes: [.posixPermissions: Int(FilePermissions.file)]),
                    let file = FileHandle(forWritingAtPath: out)
                else { throw ValidationError("cannot write \(out)") }
                handle = file
            } else {
                handle = FileHandle.standardOutput
            }
            let total = min(filter.through, try store.lastSequence())
            let progress = Progress(label: "exporting", total: total, unit: "commits")
            let summary = try AuditExporter.export(store, format: format, filter: filter, to: LineWriter(handle)) {
                progress.update($0)
            }
            progress.finish()
            FileHandle.standardError.write(Data("exported \(summary.events) events of commits \(summary.header.filter.from)…\(summary.header.filter.through)\n".utf8))
        }
    }

    /// `cumulus audit verify`
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an export against the log (or, --standalone, its own chain); exit 1 naming the first bad line.")
        @Option(help: "The data directory the export came from.") var data: String?
        @Flag(help: "Check only the file's own chain and consistency, without the data directory.") var standalone = false
        @Argument(help: "The export file.") var file: String

        func run() throws {
            guard standalone || data != nil else {
                throw ValidationError("name the data directory with --data, or check the file alone with --standalone")
            }
            let store = try standalone ? nil : data.map { try openLog($0, readOnly: true) }
            let progress = Progress(label: "verifying", total: 0, unit: "lines")
            let report = try AuditVerifier.verify(path: file, against: store) { progress.update($0) }
            progress.finish()
            print(report)
            if !report.isValid { throw ExitCode(1) }
        }
    }
}
