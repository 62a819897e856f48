import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for tests that run `cumulus`, etcd or
/// openssl beside themselves.
///
/// Not Foundation's `Process`: on Linux its launch crashed once under load inside
/// the test process (a `memmove` in `Process.run`, from etcd's start), and a test
/// that failed once under load is a bug. Here every argument and variable is copied
/// into C strings owned by the call, nothing is shared between launches, and the
/// child's output goes straight to a file or a pipe by the spawn's file actions.
///
/// Thread rules: any method may be called from any thread. The exit status is
/// collected (`waitpid`) once, by whichever call sees the child end first, and kept.
public final class SpawnedProcess: Sendable {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// Discarded (`/dev/null`).
        case discard
        /// The test process's own stream.
        case inherit
        /// Appended to the file at this path (created if missing).
        case append(String)
        /// Standard error only: wherever standard output goes.
        case withOutput
    }

    /// Why a child could not be started or read.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the system's reason.
        public let description: String
    }

    /// Held while a child is spawned (and its pipe made): see ``run(_:_:environment:errors:)``.
    private static let spawning = Mutex<Void>(())

    /// The child's process ID.
    public let pid: pid_t
    /// The exit status once collected: the code it exited with, or 128 + the signal
    /// that ended it.
    private let status = Mutex<Int32?>(nil)

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` with `arguments`, in an environment of the test process's
    /// variables with `environment` laid over them, standard input from `/dev/null`.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], output: Output = .discard,
        errors: Output = .inherit
    ) throws -> SpawnedProcess {
        let pid = try spawning.withLock { _ in
            try spawn(executable, arguments, environment: environment, output: output, errors: errors, pipe: nil)
        }
        return SpawnedProcess(pid: pid)
    }

    /// Runs `executable` to its end and returns its exit status and everything it
    /// wrote to standard output (standard error goes to `errors`).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], errors: Output = .inherit
    ) throws -> (status: Int32, output: String) {
        var descriptors: [Int32] = [-1, -1]
        // Made and spawned under the lock, and close-on-exec: a child another test
        // spawns must not inherit the write end, or this read would wait for its end.
        let pid: pid_t = try spawning.withLock { _ in
            guard pipe(&descriptors) == 0 else { throw failure("pipe") }
            for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            do {
                return try spawn(
                    executable, arguments, environment: environment, output: .discard, errors: errors, pipe: descriptors[1])
            } catch {
                close(descriptors[0])
                close(descriptors[1])
                throw error
            }
        }
        close(descriptors[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptors[0], $0.baseAddress, $0.count) }
            if count > 0 {
                output.append(contentsOf: buffer[..<count])
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        close(descriptors[0])
        let process = SpawnedProcess(pid: pid)
        return (process.waitForExit(), String(decoding: output, as: UTF8.self))
    }

    /// Whether the child has not ended yet (collecting its status if it has).
    public var isRunning: Bool { collect(blocking: false) == nil }

    /// Sends `signal` to the child, if it is still running.
    public func send(_ signal: Int32) {
        if isRunning { _ = kill(pid, signal) }
    }

    /// Blocks until the child ends; its exit status.
    @discardableResult
    public func waitForExit() -> Int32 {
        collect(blocking: true) ?? -1
    }

    /// Waits up to `timeout` for the child to end, looking every 10 ms; its exit
    /// status, or `nil` if it is still running.
    public func waitForExit(within timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = collect(blocking: false) { return status }
            if ContinuousClock.now >= deadline { return nil }
            usleep(10_000)
        }
    }

    /// The exit status if the child has ended (waiting for it if `blocking`).
    private func collect(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
                if result == pid { break }
                if result == 0 { return nil }
                if errno == EINTR { continue }
                return nil  // not our child any more (ECHILD): nothing to collect
            }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as macros.
            let signal = raw & 0x7f
            let collected = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            status = collected
            return collected
        }
    }

    /// `posix_spawn`s the child with its output streams redirected; `pipe`, if given,
    /// becomes its standard output instead of `output`.
    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String], output: Output, errors: Output,
        pipe: Int32?
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        func redirect(_ target: Output, to descriptor: Int32) {
            switch target {
            case .discard: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
            case .inherit: break
            case .withOutput: posix_spawn_file_actions_adddup2(&actions, 1, descriptor)
            case .append(let path):
                posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            }
        }
        if let pipe {
            posix_spawn_file_actions_adddup2(&actions, pipe, 1)
        } else {
            redirect(output, to: 1)
        }
        redirect(errors, to: 2)
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    private static func failure(_ operation: String) -> Failure {
        Failure(description: "\(operation): \(String(cString: strerror(errno)))")
    }
}
