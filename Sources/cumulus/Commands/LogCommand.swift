import ArgumentParser
import CumulusLog
import CumulusStorage
import Foundation

/// `cumulus log …`: inspect a data directory's log.
struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Inspect the log of a data directory.",
        subcommands: [Info.self, Verify.self]
    )

    /// Options shared by the log subcommands.
    struct DataOptions: ParsableArguments {
        @Option(name: .long, help: "The data directory.")
        var data: String = ".cumulus/data"
    }

    /// `cumulus log info`
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the log's identity, head and size.")
        @OptionGroup var options: DataOptions

        func run() throws {
            let store = try openLog(options.data, readOnly: true)
            let info = try store.environment.info()
            print("log ID:      \(store.logID.map { String(format: "%02x", $0) }.joined())")
            print("epoch:       \(store.epoch)")
            print("head:        \(store.head)")
            print("dictionary:  \(store.currentDictionaryID.map { "#\($0)" } ?? "none")")
            print("map used:    \(info.usedBytes) of \(info.mapSize) bytes")
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
            let progress = Progress(label: "verifying", total: total)
            let report = try store.verifyChain { progress.update($0) }
            progress.finish()
            print(report)
            if !report.isIntact { throw ExitCode(1) }
        }
    }
}

/// Opens the log of an existing data directory.
func openLog(_ path: String, readOnly: Bool) throws -> LogStore {
    guard FileManager.default.fileExists(atPath: path + "/data.mdb") else {
        throw ValidationError("no Cumulus data directory at \(path)")
    }
    var options = LMDBEnvironment.Options()
    options.readOnly = readOnly
    let environment = try LMDBEnvironment(path: path, options: options)
    return try LogStore(environment: environment)
}
