import CumulusTestSupport
import Foundation
import Testing

/// The `cumulus` executable these tests run as an operator does: `swift build
/// --build-tests` (`make build`, which `make test` runs first) and `swift test` build
/// it into the directory of this test binary.
enum CumulusExecutable {
    /// Where the built executable is: beside the test binary.
    static var path: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("cumulus").path
    }

    /// Whether the executable is built; if not, records an issue saying how to build it.
    static func isBuilt(sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            Issue.record("cumulus executable not built at \(path); run `make test`", sourceLocation: sourceLocation)
            return false
        }
        return true
    }

    /// Runs `cumulus` with `arguments` to its end: its exit status, and its standard
    /// output and standard error together.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try SpawnedProcess.run(path, arguments, errors: .withOutput)
    }
}
