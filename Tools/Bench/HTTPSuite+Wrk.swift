import Foundation

/// Debian's `wrk`, run as a child process against loopback, its report parsed.
struct Wrk {
    let path: String
    /// `wrk -v`'s first line, shortened (e.g. "wrk 4.1.0-3+b2 [epoll]").
    let version: String

    /// What one run reported.
    struct Result {
        var rate: Double
        var p50: Double
        var p99: Double
        var requests: Int
        var elapsed: Double
        var non2xx: Int
        var socketErrors: Int
        var socketErrorLine: String
    }

    /// Finds wrk on the PATH (installed by `make bench`).
    static func locate() throws -> Wrk {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        guard
            let path = (directories.map { "\($0)/wrk" } + ["/usr/bin/wrk"])
                .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw BenchFailure("the http suite needs wrk: `make bench` installs it (apt-get install wrk)")
        }
        let (_, output) = try runProcess(path, ["-v"])
        let first = output.split(separator: "\n").first.map(String.init) ?? "wrk"
        let version = first.components(separatedBy: " Copyright").first ?? first
        return Wrk(path: path, version: version.replacingOccurrences(of: "debian/", with: ""))
    }

    /// Writes the Lua script to a temporary file and returns its path. Each request is
    /// `HTTPSuite.sampleJSON` with a name unique to `tag` (one per run), the thread and
    /// a per-thread counter.
    func writeScript(tag: String) throws -> String {
        let marker = "NAME-MARKER"
        let parts = HTTPSuite.sampleJSON(name: marker).components(separatedBy: marker)
        guard parts.count == 2 else { throw BenchFailure("the request body template has no single name slot") }
        let script = """
            -- cumulus-bench http: one records/modify per request, a new record name each time.
            wrk.method = "POST"
            wrk.headers["Content-Type"] = "application/json"
            local threads = 0
            function setup(thread)
              thread:set("threadNumber", threads)
              threads = threads + 1
            end
            local counter = 0
            local tag = "\(tag)"
            local before = [==[\(parts[0])]==]
            local after = [==[\(parts[1])]==]
            function request()
              counter = counter + 1
              local name = tag .. "-" .. threadNumber .. "-" .. counter
              return wrk.format(nil, nil, nil, before .. name .. after)
            end

            """
        let path = NSTemporaryDirectory() + "cumulus-bench-wrk-\(UUID().uuidString).lua"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs wrk for `seconds` and parses its report. Runs on a thread of its own so
    /// the cooperative pool (which serves the server) is not blocked while it waits.
    func run(url: String, tag: String, connections: Int, threads: Int, seconds: Int) async throws -> Result {
        try await run(url: url, script: try writeScript(tag: tag), connections: connections, threads: threads, seconds: seconds)
    }

    /// Runs wrk sending the same POST `body` with every request, as a client that
    /// reads the same page over and over does.
    func run(url: String, body: String, connections: Int, threads: Int, seconds: Int) async throws -> Result {
        let script = """
            -- cumulus-bench: the same POST body with every request.
            wrk.method = "POST"
            wrk.headers["Content-Type"] = "application/json"
            wrk.body = [==[\(body)]==]

            """
        let path = NSTemporaryDirectory() + "cumulus-bench-wrk-\(UUID().uuidString).lua"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        return try await run(url: url, script: path, connections: connections, threads: threads, seconds: seconds)
    }

    /// Runs wrk with the Lua script at `script` (removed afterwards).
    private func run(url: String, script: String, connections: Int, threads: Int, seconds: Int) async throws -> Result {
        defer { try? FileManager.default.removeItem(atPath: script) }
        let arguments = [
            "-t", "\(threads)", "-c", "\(connections)", "-d", "\(seconds)s", "--timeout", "10s", "--latency",
            "-s", script, url,
        ]
        let path = self.path
        let (status, output) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Int32, String), any Error>) in
            Thread.detachNewThread {
                continuation.resume(with: Result2 { try runProcess(path, arguments) }.result)
            }
        }
        guard status == 0 else { throw BenchFailure("wrk exited with \(status):\n\(output)") }
        return try Self.parse(output)
    }

    /// Parses wrk's text report (`--latency`).
    static func parse(_ output: String) throws -> Result {
        var rate: Double?
        var p50: Double?
        var p99: Double?
        var requests: Int?
        var elapsed: Double?
        var non2xx = 0
        var socketErrors = 0
        var socketErrorLine = ""
        for raw in output.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if line.hasPrefix("Requests/sec:"), words.count >= 2 {
                rate = Double(words[1])
            } else if words.count >= 2, words[0] == "50%" {
                p50 = duration(words[1])
            } else if words.count >= 2, words[0] == "99%" {
                p99 = duration(words[1])
            } else if words.count >= 4, words[1] == "requests", words[2] == "in" {
                requests = Int(words[0])
                elapsed = duration(words[3].trimmingCharacters(in: CharacterSet(charactersIn: ",")))
            } else if line.hasPrefix("Non-2xx or 3xx responses:"), let last = words.last {
                non2xx = Int(last) ?? -1
            } else if line.hasPrefix("Socket errors:") {
                socketErrorLine = line
                socketErrors = line.dropFirst("Socket errors:".count).split(separator: ",").reduce(0) { sum, part in
                    sum + (part.split(separator: " ").last.flatMap { Int($0) } ?? 0)
                }
            }
        }
        guard let rate, let p50, let p99, let requests, let elapsed else {
            throw BenchFailure("could not read wrk's report:\n\(output)")
        }
        return Result(
            rate: rate, p50: p50, p99: p99, requests: requests, elapsed: elapsed, non2xx: non2xx,
            socketErrors: socketErrors, socketErrorLine: socketErrorLine)
    }

    /// A wrk duration ("812.00us", "1.23ms", "5.00s", "1.00m") in seconds.
    static func duration(_ text: String) -> Double? {
        for (suffix, scale) in [("us", 1e-6), ("ms", 1e-3), ("m", 60.0), ("s", 1.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }
}

/// `Result(catching:)` spelled so it does not clash with `Wrk.Result`.
private struct Result2<Value> {
    let result: Swift.Result<Value, any Error>
    init(_ body: () throws -> Value) { result = Swift.Result(catching: body) }
}

/// Runs `path` with `arguments`, waits, returns its status and standard output +
/// standard error.
func runProcess(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
