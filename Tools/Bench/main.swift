// cumulus-bench: release-build benchmarks. Every figure is printed beside a baseline
// measured in the same run on the same data, with the ratio and the target.
//
//   cumulus-bench [log|engine|query|changes|http|tools|all] [--quick] [--json]  (`make bench BENCH_ARGS="log --quick"`)
//   cumulus-bench tables [RUN…]   the figures of saved `--json` runs as Markdown tables
//
// Suites are types conforming to `BenchSuite`, one per file; add new ones to
// `BenchOptions.suites`.

import Foundation

/// What the command line asked for.
struct BenchOptions {
    /// Every suite, in the order `all` runs them.
    static var suites: [Suite] {
        [
            Suite(ToolsSuite.self),
            Suite(LogSuite.self), Suite(EngineSuite.self), Suite(QuerySuite.self), Suite(ChangesSuite.self),
            Suite(HTTPSuite.self), Suite(HTTPReadSuite.self), Suite(ReplicationSuite.self),
        ]
    }

    /// Smaller counts, for a check in well under a minute.
    var quick = false
    /// Each figure also as a JSON line (``FigureRecord``).
    var json = false
    /// The suites to run.
    var selected: [Suite] = suites

    static let usage = """
        usage: cumulus-bench [\((suites.map(\.name) + ["all"]).joined(separator: "|"))] [--quick] [--json]
          (default: all)   --quick  smaller counts, a fraction of the time
                           --json   also print each figure as a JSON object on its own line
                                    (suite, section, figure, value, unit, baseline, baselineValue,
                                    baselineUnit, ratio, target, met)
               cumulus-bench tables [RUN…]
                           the figures of saved --json runs (files, or standard input) as Markdown tables
        """

    init(_ arguments: [String]) throws {
        var names: [String] = []
        for argument in arguments {
            switch argument {
            case "--quick": quick = true
            case "--json": json = true
            case "-h", "--help": throw BenchFailure(Self.usage)
            case let name where !name.hasPrefix("-"): names.append(name)
            default: throw BenchFailure("unknown option \(argument)\n\(Self.usage)")
            }
        }
        if !names.isEmpty && !names.contains("all") {
            selected = try names.map { name in
                guard let suite = Self.suites.first(where: { $0.name == name }) else {
                    throw BenchFailure("unknown suite \(name)\n\(Self.usage)")
                }
                return suite
            }
        }
    }
}

/// A group of measurements with their baselines.
protocol BenchSuite {
    /// The name on the command line.
    static var name: String { get }
    /// Runs every measurement of the suite, printing into `report`.
    static func run(quick: Bool, report: Report) async throws
}

/// A registered suite. Holds the suite's entry point as a closure rather than the
/// existential metatype `any BenchSuite.Type`, whose static calls crash the Swift
/// 6.3 compiler (signal 11 in SIL lowering).
struct Suite {
    let name: String
    let run: (_ quick: Bool, _ report: Report) async throws -> Void

    init<S: BenchSuite>(_ suite: S.Type) {
        name = S.name
        run = { quick, report in try await S.run(quick: quick, report: report) }
    }
}

/// Runs the selected suites; returns the process exit status. Nonisolated, so the
/// suites run on the cooperative pool rather than the main actor.
func runBench(_ arguments: [String]) async -> Int32 {
    do {
        if arguments.first == "tables" {
            let files = arguments.dropFirst()
            let text = files.isEmpty
                ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                : try files.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
            FileHandle.standardOutput.write(Data(try MarkdownTables.render(text).utf8))
            return 0
        }
        let options = try BenchOptions(arguments)
        #if DEBUG
        Report.emit("warning: a debug build; run `make bench` (release) for meaningful figures")
        #endif
        let cores = ProcessInfo.processInfo.activeProcessorCount
        Report.emit("cumulus-bench\(options.quick ? " --quick" : ""): \(cores) cores, \(ProcessInfo.processInfo.operatingSystemVersionString)")
        let report = Report(json: options.json)
        let total = try await measureAsync {
            for suite in options.selected {
                report.suite = suite.name
                try await suite.run(options.quick, report)
            }
        }
        report.summary()
        Report.emit("total \(Report.format(total)) s")
        return 0
    } catch {
        FileHandle.standardError.write(Data("cumulus-bench: \(error)\n".utf8))
        return 1
    }
}

exit(await runBench(Array(CommandLine.arguments.dropFirst())))
