import Foundation
import Synchronization

/// A server the bench runs beside itself (etcd, a `cumulus serve` node): started with
/// arguments, its standard output and error appended to files, killed without warning
/// on demand, and started again on the same arguments.
///
/// The bench must leave no server running however it ends: the suite that starts a
/// child kills it in a `defer`, and ``killAllOnSignals()`` kills every child still
/// running when SIGINT or SIGTERM ends the bench (they would end the bench alone).
final class ChildProcess: Sendable {
    let executable: String
    let arguments: [String]
    /// Where standard output goes (appended to across restarts).
    let outputPath: String
    /// Where standard error goes (appended to across restarts).
    let errorPath: String
    /// The running process, if any. Foundation's `Process` is not `Sendable`: it stays
    /// inside the mutex, and only values derived from it come out.
    private let process = Mutex<Process?>(nil)

    init(_ executable: String, _ arguments: [String], logs: String) {
        self.executable = executable
        self.arguments = arguments
        outputPath = logs + ".out"
        errorPath = logs + ".err"
    }

    /// Starts the program (again, after ``kill()``), with `extra` arguments for this
    /// start only; throws if it is running.
    func start(_ extra: [String] = []) throws {
        let manager = FileManager.default
        try manager.createDirectory(
            atPath: (outputPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        for path in [outputPath, errorPath] where !manager.fileExists(atPath: path) {
            _ = manager.createFile(atPath: path, contents: nil)
        }
        try process.withLock { slot in
            if let running = slot, running.isRunning { throw BenchFailure("\(executable) is already running") }
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = arguments + extra
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
            output.seekToEndOfFile()
            errors.seekToEndOfFile()
            child.standardOutput = output
            child.standardError = errors
            child.standardInput = FileHandle.nullDevice
            try child.run()
            // The child holds its own descriptors now.
            try? output.close()
            try? errors.close()
            Self.running.withLock { _ = $0.insert(child.processIdentifier) }
            slot = child
        }
    }

    var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }

    /// Kills the program without warning (SIGKILL) and waits until it is gone; does
    /// nothing if it is not running. Synchronous, so a `defer` can call it.
    func kill() {
        process.withLock { slot in
            guard let child = slot else { return }
            let pid = child.processIdentifier
            if child.isRunning {
                Foundation.kill(pid, SIGKILL)
                // Polled: Foundation reaps the child on its own thread, and its
                // `waitUntilExit` spins a run loop on Linux.
                let deadline = ContinuousClock.now + .seconds(10)
                while child.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
            }
            Self.running.withLock { _ = $0.remove(pid) }
        }
    }

    /// The last `lines` lines of the program's standard error (to say why a wait failed).
    func errorTail(_ lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// What the program printed on standard output so far.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    // MARK: - Children left behind by a signal

    /// Every child started and not yet killed, by process ID.
    private static let running = Mutex<Set<Int32>>([])
    /// Directories the children work in, removed after they are killed on a signal.
    private static let directories = Mutex<Set<String>>([])
    /// The signal sources, kept alive for the life of the process.
    private static let signalSources = Mutex<[any DispatchSourceSignal]>([])

    /// Removes `path` too if a signal ends the bench (unless `CUMULUS_BENCH_KEEP` is set),
    /// until ``keepOnSignal(_:)``.
    static func removeOnSignal(_ path: String) { _ = directories.withLock { $0.insert(path) } }

    /// Stops removing `path` on a signal (its owner has removed it).
    static func keepOnSignal(_ path: String) { _ = directories.withLock { $0.remove(path) } }

    /// From now on, SIGINT and SIGTERM kill every running child, and remove the
    /// directories named by ``removeOnSignal(_:)``, before the bench exits (status
    /// 128 + the signal, as the shell reports it). Calling it again does nothing.
    static func killAllOnSignals() {
        signalSources.withLock { sources in
            guard sources.isEmpty else { return }
            for number in [SIGINT, SIGTERM] {
                // Ignored as a signal so that only the dispatch source sees it.
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler {
                    for pid in running.withLock({ $0 }) { Foundation.kill(pid, SIGKILL) }
                    if ProcessInfo.processInfo.environment["CUMULUS_BENCH_KEEP"] == nil {
                        for path in directories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
                    }
                    exit(128 + number)
                }
                source.resume()
                sources.append(source)
            }
        }
    }
}
