import ArgumentParser
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTools
import Foundation

/// `cumulus log …`: read and inspect a data directory's log.
struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Read the log of a data directory: one line per event, filters, --follow, --json.",
        subcommands: [Events.self, Info.self, Verify.self],
        defaultSubcommand: Events.self
    )

    /// Options shared by the log subcommands.
    struct DataOptions: ParsableArguments {
        @Option(name: .long, help: "The data directory.")
        var data: String = ".cumulus/data"
    }

    /// `cumulus log [events]`: the events, one line each.
    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "Print the log one event per line (sequence, time, user, operation, zone, record, keys, cause).",
            discussion: """
                Works on a stopped node's directory, a copy, or a running node (read-only; LMDB lets
                other processes read while the server writes). --follow keeps printing new commits.
                """)
        @OptionGroup var options: DataOptions
        @OptionGroup var scope: ScopeOptions
        @Option(help: "First commit shown: a sequence or an ISO-8601 time.") var from: String?
        @Option(help: "Last commit shown: a sequence or an ISO-8601 time.") var to: String?
        @Option(help: "Only the last N commits.") var last: UInt64?
        @Option(help: "Only events of this record name.") var record: String?
        @Option(help: "Only commits by this user (record name).") var user: String?
        @Option(help: "Only events of this record type.") var type: String?
        @Option(help: "Stop after N events.") var limit: Int?
        @Flag(help: "One JSON object per event (the audit export's fields).") var json = false
        @Flag(help: "Keep running and print new commits as they are made.") var follow = false

        func run() throws {
            // Optional, so --follow can close it before reopening (never two handles at once).
            var store: LogStore? = try openLog(options.data, readOnly: true)
            func using<T>(_ body: (LogStore) throws -> T) throws -> T {
                guard let store else { throw ValidationError("the log is closed") }
                return try body(store)
            }
            var filter = LogFilter(scope: scope.matcher, recordName: record, user: user, recordType: type)
            try using { store in
                // Without --from, a log that dropped its first commits is read from what it keeps.
                filter.from = max(try from.map { try resolvePoint($0, in: store) } ?? store.firstRetained, 1)
                if let to { filter.through = try resolvePoint(to, in: store) }
                if let last {
                    let head = try store.lastSequence()
                    filter.from = max(filter.from, head >= last ? head - last + 1 : 1)
                }
            }
            var remaining = limit ?? .max
            let json = self.json
            let follow = self.follow
            func printEntries(_ filter: LogFilter) throws -> UInt64 {
                try using { store in
                    try LogBrowser.forEach(in: store, filter: filter) { entry in
                        let line = json ? EntryFormatter.json(entry) : EntryFormatter.text(entry)
                        // Following, each line goes out at once even into a pipe.
                        if follow { FileHandle.standardOutput.write(Data((line + "\n").utf8)) } else { print(line) }
                        remaining -= 1
                        return remaining > 0
                    }
                }
            }
            var shown = try printEntries(filter)
            guard follow, remaining > 0, to == nil else { return }
            shown = max(shown, filter.from - 1)
            while remaining > 0 {
                Thread.sleep(forTimeInterval: 0.25)
                do {
                    // Another process's commits are not signalled: poll the stored head.
                    guard try using({ try $0.lastSequence() }) > shown else { continue }
                    var next = filter
                    next.from = shown + 1
                    shown = max(shown, try printEntries(next))
                } catch LogError.unknownDictionary {
                    // The server installed a dictionary after we opened: reopen to load it.
                    store = nil
                    store = try openLog(options.data, readOnly: true)
                }
            }
        }
    }

    /// `cumulus log info`
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the log's identity, head and size.")
        @OptionGroup var options: DataOptions

        func run() throws {
            let store = try openLog(options.data, readOnly: true)
            let logInfo = try store.logEnvironment.info()
            let viewsInfo = try store.environment.info()
            print("log ID:      \(Hex.encode(store.logID))")
            print("epoch:       \(store.epoch)")
            print("head:        \(store.head)")
            if store.firstRetained > 1 {
                print("retained:    from #\(store.firstRetained) (retention dropped the earlier commits)")
            }
            print("dictionary:  \(store.currentDictionaryID.map { "#\($0)" } ?? "none")")
            print("history:     \(try store.hasRecordHistory() ? "indexed" : "not indexed (run `cumulus rebuild` once)")")
            if let through = try Replayer.replayedThrough(store) {
                print("replay:      read-only copy of the log through #\(through)")
            }
            print("views:       applied through #\(try store.appliedHead().sequence)\(try viewsSyncLine(store))")
            if let snapshot = try store.viewsSnapshot() {
                print("snapshot:    views as of #\(snapshot.sequence) (retention keeps every later commit)")
            }
            print("map used:    log \(logInfo.usedBytes) of \(logInfo.mapSize) bytes, views \(viewsInfo.usedBytes) of \(viewsInfo.mapSize) bytes")
        }

        /// When the views were last made durable, as the log records it.
        private func viewsSyncLine(_ store: LogStore) throws -> String {
            guard let record = try store.viewsRecord() else { return "" }
            let boot = record.boot == ViewsDurability.currentBoot ? "this boot" : "an earlier boot"
            return "; last views sync at #\(record.synced) in \(boot)\(record.clean ? ", closed cleanly" : "")"
        }
    }

    /// `cumulus log verify`
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every frame's checksum and the hash chain; exit 1 naming the first bad sequence.")
        @OptionGroup var options: DataOptions

        func run() throws {
            let store = try openLog(options.data, readOnly: true)
            let total = store.head.sequence
            let progress = Progress(label: "verifying", total: total, unit: "commits")
            let report = try store.verifyChain { progress.update($0) }
            progress.finish()
            print(report)
            if !report.isIntact { throw ExitCode(1) }
        }
    }
}

/// Opens the log of an existing data directory.
func openLog(_ path: String, readOnly: Bool) throws -> LogStore {
    try DataDirectory.openLog(path, readOnly: readOnly)
}
