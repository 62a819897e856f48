import ArgumentParser
import CumulusEngine
import CumulusModel
import CumulusStorage
import Foundation

/// `cumulus verify`: rebuild the views from the log in a scratch directory and
/// compare them, by digest, with the live ones; check the hash chain.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Prove the views match the log and the hash chain holds; exit 1 naming what differs.")

    @OptionGroup var options: LogCommand.DataOptions

    func run() throws {
        let container = try openContainer(options.data)
        defer { container.close() }
        let total = container.store.head.sequence
        var bars: [String: Progress] = [:]
        let report = try container.verify { phase, done in
            let bar = bars[phase] ?? Progress(label: phase == "chain" ? "checking chain" : "replaying log", total: total)
            bars[phase] = bar
            bar.update(done)
        }
        for bar in bars.values { bar.finish() }
        for line in report.lines { print(line) }
        if !report.isHealthy {
            print("verify: FAILED")
            throw ExitCode(1)
        }
        print("verify: OK")
    }
}

/// `cumulus rebuild`: drop every view and replay the log into them.
struct RebuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild", abstract: "Drop every view and rebuild it by replaying the log.")

    @OptionGroup var options: LogCommand.DataOptions

    func run() throws {
        let container = try openContainer(options.data)
        defer { container.close() }
        let progress = Progress(label: "rebuilding", total: container.store.head.sequence)
        let replayed = try container.rebuild { progress.update($0) }
        progress.finish()
        print("rebuilt the views from \(replayed) commits")
    }
}

/// Opens an existing data directory for maintenance. Index builds that a schema
/// change causes (in `rebuild`, `schema import|deploy|reset`) report their progress on
/// standard error.
func openContainer(_ path: String) throws -> Container {
    guard FileManager.default.fileExists(atPath: path + "/data.mdb") else {
        throw ValidationError("no Cumulus data directory at \(path)")
    }
    return try Container(path: path, indexBuildObserver: reportIndexBuild)
}

@Sendable private func reportIndexBuild(_ schema: SchemaID, _ type: String, _ records: Int) {
    FileHandle.standardError.write(Data("indexing \(schema) \(type): \(records) records\n".utf8))
}
