import CumulusTestSupport
import Foundation
import Synchronization

/// A `cumulus` process for multi-process tests: started with arguments, its output
/// in files, killed or stopped on demand.
final class NodeProcess: @unchecked Sendable {
    /// The built `cumulus` binary (`swift build` puts it in `.build/debug`).
    static let binary: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.appendingPathComponent(".build/debug/cumulus").path
    }()

    let arguments: [String]
    /// Variables added to the test process's environment for this node.
    let environment: [String: String]
    let port: Int
    let output: String
    let errors: String
    private var process: SpawnedProcess?

    /// The node's base URL.
    var url: String { "http://127.0.0.1:\(port)" }

    /// The metrics token every node is started with, so tests read `/healthz`'s
    /// detail and `/metrics` (``TestHTTP/operatorHeaders``).
    static let metricsToken = "test-metrics-token"

    init(_ arguments: [String], port: Int, logDirectory: String, environment: [String: String] = [:]) {
        // Port 0: a command that serves nothing (`promote`).
        self.arguments = port == 0 ? arguments : arguments + ["--port", String(port)]
        self.environment = environment.merging(["CUMULUS_METRICS_TOKEN": Self.metricsToken]) { mine, _ in mine }
        self.port = port
        let name = "node-\(port)-\(UUID().uuidString.prefix(8))"
        output = logDirectory + "/\(name).out"
        errors = logDirectory + "/\(name).err"
    }

    /// Starts (or restarts) the process.
    func start() throws {
        try FileManager.default.createDirectory(
            atPath: (output as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: output) { _ = FileManager.default.createFile(atPath: output, contents: nil) }
        if !FileManager.default.fileExists(atPath: errors) { _ = FileManager.default.createFile(atPath: errors, contents: nil) }
        process = try SpawnedProcess.start(
            Self.binary, arguments, environment: environment, output: .append(output), errors: .append(errors))
    }

    /// The running process's ID, or `nil` before it starts.
    var processID: Int32? { process?.pid }

    /// Freezes the process (SIGSTOP): its sockets stay open, nothing in it runs.
    func pause() {
        process?.send(SIGSTOP)
    }

    /// Thaws it (SIGCONT).
    func resume() {
        process?.send(SIGCONT)
    }

    /// Kills the process without warning.
    func kill() {
        guard let process, process.isRunning else { return }
        process.send(SIGKILL)
        _ = process.waitForExit(within: .seconds(10))
    }

    /// Asks the process to stop (SIGTERM) and waits up to 30 s (then kills it);
    /// returns its exit status.
    @discardableResult
    func stop() -> Int32 {
        guard let process else { return -1 }
        process.send(SIGTERM)
        if let status = process.waitForExit(within: .seconds(30)) { return status }
        process.send(SIGKILL)
        _ = process.waitForExit(within: .seconds(10))
        return -9
    }

    /// Waits up to `timeout` for the process to exit by itself; its status, or `nil`.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        // Asked once more after the deadline: this task may wake from its sleep late.
        while true {
            let last = ContinuousClock.now >= deadline
            if let process, !process.isRunning { return process.waitForExit() }
            if last { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// What it printed so far.
    var stdout: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }

    /// A free TCP port on the loopback interface, for a process the test starts to
    /// listen on.
    ///
    /// Taken below the kernel's ephemeral range (32768 and up on Linux), from a counter
    /// that starts at a random point: a port the kernel picked (bind to port 0) can be
    /// handed out again as the source port of one of the tests' many outgoing
    /// connections before the child binds it, and then the child cannot start. Ports
    /// here are never handed out that way, and each is given once per test run.
    static func freePort() -> Int {
        while true {
            let candidate = nextPort.withLock { port -> Int in
                defer { port = port >= 31_999 ? 20_000 : port + 1 }
                return port
            }
            if canBind(candidate) { return candidate }
        }
    }

    private static let nextPort = Mutex(20_000 + Int.random(in: 0..<6_000))

    /// Whether nothing listens on (or holds) `port` on the loopback interface now.
    private static func canBind(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
    }
}
