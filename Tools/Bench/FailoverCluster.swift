import AsyncHTTPClient
import CumulusReplication
import Foundation
import NIOCore
import Synchronization

/// A private etcd and three `cumulus serve --etcd` nodes on loopback, in one scratch
/// directory: what `make cluster` starts, with a 2 s lease and `--sync-replicas 1`, for
/// the replication suite's write outage after a leader kill.
///
/// The nodes are the `cumulus` executable beside the bench's own (`make bench` builds
/// both in release), or `CUMULUS_BIN`. ``stop()`` kills every process and removes the
/// directory; the suite calls it in a `defer`, so nothing is left running however the
/// measurement ends.
final class FailoverCluster: Sendable {
    /// One member: its name in the cluster, its port, its process.
    struct Node: Sendable {
        let name: String
        let port: Int
        let process: ChildProcess
        var url: String { "http://127.0.0.1:\(port)" }
    }

    /// What a write got back.
    enum Answer: Sendable, Equatable {
        /// Acknowledged: 200, and no per-record error.
        case saved
        /// Refused by a follower, which named the leader it knows (maybe a dead one).
        case notLeader(url: String?)
        /// Anything else: no answer within the deadline, refused, or unknown outcome.
        case failed
    }

    static let container = "iCloud.com.example.cumulus"
    static let secret = "cumulus-bench-failover"
    static let leaseTTL = 2
    static let syncTimeout = 5

    let directory: ScratchDirectory
    let etcd: ChildProcess
    let etcdURL: String
    let nodes: [Node]
    /// `?ckAPIToken=…&ckWebAuthToken=…`, minted by the first node (`--dev`); set once by
    /// ``start()`` before any write.
    private let credentials = Mutex<String>("")

    /// Chooses the ports and arguments and writes the secret; starts nothing (``start()``
    /// does). What can fail comes before the directory exists, so a failure leaves none.
    init() throws {
        let etcdBinary = try Self.etcdBinary()
        let binary = try Self.cumulusBinary()
        let ports = try HTTPSuite.freeLoopbackPorts(5)
        directory = ScratchDirectory("replication-failover")
        let root = directory.path
        let secretFile = root + "/replication-secret"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        ChildProcess.removeOnSignal(root)
        // Read from a file, as Docs/OPERATIONS.md asks (the command line shows in `ps`).
        guard FileManager.default.createFile(
            atPath: secretFile, contents: Data(Self.secret.utf8), attributes: [.posixPermissions: 0o600])
        else {
            directory.remove()
            throw BenchFailure("cannot write \(secretFile)")
        }

        let etcdURL = "http://127.0.0.1:\(ports[0])"
        let peerURL = "http://127.0.0.1:\(ports[1])"
        self.etcdURL = etcdURL
        etcd = ChildProcess(
            etcdBinary,
            [
                "--name", "bench", "--data-dir", root + "/etcd",
                "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
                "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster", "bench=\(peerURL)", "--logger", "zap", "--log-outputs", root + "/logs/etcd.log",
            ],
            logs: root + "/logs/etcd")
        nodes = zip(["a", "b", "c"], ports[2...]).map { name, port in
            let arguments = [
                "serve", "--data", root + "/" + name, "--port", String(port),
                "--replication-secret-file", secretFile, "--container", Self.container,
                "--etcd", etcdURL, "--cluster", "bench", "--node", name, "--advertise", "http://127.0.0.1:\(port)",
                "--lease-ttl", String(Self.leaseTTL), "--sync-replicas", "1", "--sync-timeout", String(Self.syncTimeout),
                // Writers send flat out through the failover; the rate limits are not measured.
                "--user-requests-per-second", "0", "--address-requests-per-second", "0",
            ]
            return Node(name: name, port: port, process: ChildProcess(binary, arguments, logs: root + "/logs/" + name))
        }
    }

    /// Kills etcd and every node and removes the directory (unless `CUMULUS_BENCH_KEEP`).
    func stop() {
        for node in nodes { node.process.kill() }
        etcd.kill()
        directory.remove()
        ChildProcess.keepOnSignal(directory.path)
    }

    /// Starts etcd, then the first node, which leads and starts the log, then the two
    /// others, and waits until both stream from it and it takes writes. Slow starts are
    /// allowed for (a shared machine): up to two minutes for each step.
    func start() async throws {
        try etcd.start()
        try await waitUntil("etcd to answer healthy at \(etcdURL)") {
            (try? await Self.get(etcdURL + "/health"))?.text.contains("\"health\":\"true\"") == true
        }
        // The first node starts the cluster's log and mints the development credentials,
        // which reach the others with the stream. Only this once: restarted after a
        // kill, it follows, and a follower mints nothing.
        let first = nodes[0]
        try first.process.start(["--dev"])
        try await waitUntil("node a to print its credentials") { first.process.output.contains("ckWebAuthToken:") }
        let printed = first.process.output.split(separator: "\n")
        // "  ckAPIToken:     TOKEN": the development one (a production one follows).
        func token(_ key: String) -> String {
            let line = printed.first { $0.drop { $0 == " " }.hasPrefix(key) }
            return line.map { String($0.split(separator: " ").last ?? "") } ?? ""
        }
        let query = "?ckAPIToken=\(token("ckAPIToken:"))&ckWebAuthToken=\(token("ckWebAuthToken:"))"
        credentials.withLock { $0 = query }
        for node in nodes.dropFirst() { try node.process.start() }
        try await waitUntil("nodes b and c to stream from a") { await followers(of: first) == 2 }
        // Not before: with --sync-replicas 1 a leader alone acknowledges nothing.
        try await waitUntil("node a to take writes") { await save("first", 0, on: first) == .saved }
    }

    // MARK: - Who leads

    /// `node`'s replication status, or `nil` if it does not answer within 2 s (a
    /// ``LeaderClient`` shakes hands first: the secret never travels).
    func status(_ node: Node) async -> ReplicationStatus? {
        let client = LeaderClient(leaderURL: node.url, secret: Self.secret, readTimeout: .seconds(2))
        let status = try? await client.status()
        await client.shutdown()
        return status
    }

    /// The node whose status says it leads, if exactly one does.
    func leader() async -> Node? {
        var leaders: [Node] = []
        for node in nodes where await status(node)?.role == "leader" { leaders.append(node) }
        return leaders.count == 1 ? leaders[0] : nil
    }

    /// How many of the other nodes stream from `leader` now.
    func followers(of leader: Node) async -> Int {
        var count = 0
        for node in nodes where node.name != leader.name {
            if let following = await status(node)?.following, following.leaderURL == leader.url, following.state == "streaming" {
                count += 1
            }
        }
        return count
    }

    // MARK: - Writes and reads

    /// The URL of a private-database operation with the development credentials.
    func privateURL(_ node: Node, _ operation: String) -> String {
        "\(node.url)/database/1/\(Self.container)/development/private/\(operation)" + credentials.withLock { $0 }
    }

    /// Saves record `name` (its `n` field `value`) on `node` in one `records/modify`.
    /// `timeout` bounds the whole exchange: AsyncHTTPClient would otherwise queue a
    /// request for a dead node until its 10 s connect timeout.
    func save(_ name: String, _ value: Int, on node: Node, timeout: TimeAmount = .seconds(1)) async -> Answer {
        let body = #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Item","fields":{"n":{"value":\#(value)}}}}]}"#
        guard let answer = try? await Self.post(privateURL(node, "records/modify"), body, timeout: timeout) else {
            return .failed
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
        if answer.status == 200 {
            let records = json["records"] as? [[String: Any]] ?? []
            return records.count == 1 && records[0]["serverErrorCode"] == nil ? .saved : .failed
        }
        if json["serverErrorCode"] as? String == "NOT_LEADER" { return .notLeader(url: json["leaderURL"] as? String) }
        return .failed
    }

    /// The names among `names` that `node` does not hold, looked up 200 (the API's most
    /// per request) at a time.
    func missing(_ names: [String], on node: Node) async throws -> [String] {
        var missing: [String] = []
        for start in stride(from: 0, to: names.count, by: 200) {
            let batch = names[start..<min(names.count, start + 200)]
            let body = #"{"records":["# + batch.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ",") + "]}"
            let answer = try await Self.post(privateURL(node, "records/lookup"), body, timeout: .seconds(30))
            guard answer.status == 200,
                let records = ((try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any])?["records"]
                    as? [[String: Any]]
            else { throw BenchFailure("records/lookup on \(node.url) answered \(answer.status): \(answer.text.prefix(300))") }
            let held = Set(records.compactMap { $0["serverErrorCode"] == nil ? $0["recordName"] as? String : nil })
            missing += batch.filter { !held.contains($0) }
        }
        return missing
    }

    // MARK: - Waiting

    /// Polls `condition` every 50 ms for up to `timeout`; then fails, saying what was
    /// awaited and with the end of each node's standard error.
    func waitUntil(_ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                let tails = nodes.map { "---- node \($0.name) (\($0.url)), standard error:\n\($0.process.errorTail())" }
                throw BenchFailure("waited \(timeout) for \(what)\n" + tails.joined(separator: "\n"))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    // MARK: - Finding the programs

    /// Debian's etcd (`make deps` installs etcd-server), else the first on the PATH.
    static func etcdBinary() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = ["/usr/bin/etcd"] + path.split(separator: ":").map { "\($0)/etcd" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchFailure("the replication suite's failover figure needs etcd: `make deps` installs it (Debian's etcd-server)")
        }
        return found
    }

    /// `CUMULUS_BIN`, else the `cumulus` executable beside this one: the same build
    /// directory, so a release bench runs release nodes.
    static func cumulusBinary() throws -> String {
        if let chosen = ProcessInfo.processInfo.environment["CUMULUS_BIN"] { return chosen }
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let beside = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("cumulus").path
        guard FileManager.default.isExecutableFile(atPath: beside) else {
            throw BenchFailure(
                "the replication suite's failover figure runs `cumulus serve`, not found at \(beside): "
                    + "`make bench` builds it (or `swift build -c release --product cumulus`; CUMULUS_BIN names another)")
        }
        return beside
    }

    // MARK: - HTTP

    /// A status and body.
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// AsyncHTTPClient's process-wide client: every call carries its own deadline, and
    /// it needs no shutdown, which a suite that throws might skip.
    static func get(_ url: String, headers: [String: String] = [:], timeout: TimeAmount = .seconds(2)) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return try await execute(request, timeout: timeout)
    }

    static func post(_ url: String, _ json: String, timeout: TimeAmount) async throws -> Response {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        return try await execute(request, timeout: timeout)
    }

    private static func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> Response {
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Response(status: Int(response.status.code), body: Array(bytes.readableBytesView))
    }
}
