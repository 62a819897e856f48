import CumulusEngine
import CumulusReplication
import Foundation
import NIOHTTP1
import Synchronization

/// Leader and follower processes for multi-process tests, in one temporary
/// directory, with the leader's development credentials and a write load.
final class Cluster: @unchecked Sendable {
    static let secret = "test-replication-secret"
    static let containerName = "iCloud.com.example.cumulus"

    let root: String
    private(set) var nodes: [NodeProcess] = []
    var apiToken = ""
    var webToken = ""

    init(_ label: String = #function) throws {
        root = ReplicationWorld.temporaryPath(label)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        // Leaders read the secret from a file, followers from the environment: as
        // Docs/OPERATIONS.md says, never from the command line (`ps` shows it).
        _ = FileManager.default.createFile(
            atPath: secretFile, contents: Data(Self.secret.utf8), attributes: [.posixPermissions: 0o600])
    }

    /// The file holding ``secret``.
    var secretFile: String { root + "/replication-secret" }

    /// A leader's `serve` arguments on `data`, the secret read from ``secretFile``.
    func leaderArguments(_ data: String) -> [String] {
        ["serve", "--data", path(data), "--replication-secret-file", secretFile]
    }

    deinit {
        for node in nodes { node.kill() }
        try? FileManager.default.removeItem(atPath: root)
    }

    func path(_ name: String) -> String { root + "/" + name }

    /// What `cumulus serve` printed to standard error when it refused to start with
    /// `arguments` (on a directory of this cluster's), or `nil` if it started.
    func refusal(_ arguments: [String]) async -> String? {
        let node = NodeProcess(["serve", "--data", path("refused")] + arguments, port: 0, logDirectory: root + "/logs")
        try? node.start()
        let status = await node.waitForExit(timeout: .seconds(60))
        node.kill()
        return status == 0 ? nil : node.stderr
    }

    /// Takes `node` into the cluster's care: killed when the cluster goes.
    func track(_ node: NodeProcess) { nodes.append(node) }

    /// Reads the development credentials a node started with `--dev` printed.
    func takeCredentials(from node: NodeProcess) {
        let lines = node.stdout.split(separator: "\n")
        func value(_ key: String) -> String {
            lines.first { $0.contains(key) }.map { String($0.split(separator: " ").last ?? "") } ?? ""
        }
        apiToken = value("ckAPIToken:")
        webToken = value("ckWebAuthToken:")
    }

    /// Starts a leader on `data` (minting development credentials unless `dev` is false),
    /// with `extra` arguments.
    func startLeader(_ data: String, dev: Bool = true, extra: [String] = []) async throws -> NodeProcess {
        var arguments = leaderArguments(data) + ["--container", Self.containerName] + extra
        if dev { arguments.append("--dev") }
        let node = NodeProcess(arguments, port: NodeProcess.freePort(), logDirectory: root + "/logs")
        nodes.append(node)
        try node.start()
        try await TestHTTP.waitUntilUp(node.url)
        if dev { takeCredentials(from: node) }
        return node
    }

    /// A leader on `leader` (with development credentials) and a running follower of it on `follower`.
    func startPair() async throws -> (leader: NodeProcess, follower: NodeProcess) {
        let leader = try await startLeader("leader")
        let follower = follower("follower", of: leader.url)
        try follower.start()
        try await TestHTTP.waitUntilUp(follower.url)
        return (leader, follower)
    }

    /// A follower process of `leaderURL` on `data` (not started).
    func follower(_ data: String, of leaderURL: String, extra: [String] = [], secret: String = Cluster.secret) -> NodeProcess {
        let node = NodeProcess(
            ["serve", "--data", path(data), "--follow", leaderURL, "--name", data] + extra,
            port: NodeProcess.freePort(), logDirectory: root + "/logs",
            environment: [ReplicationSecret.environmentVariable: secret])
        nodes.append(node)
        return node
    }

    /// The URL of a private-database operation with the development credentials.
    func privateURL(_ node: NodeProcess, _ operation: String) -> String {
        "\(node.url)/database/1/\(Self.containerName)/development/private/\(operation)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)"
    }

    /// Saves record `name` on `node`; the answer (an error after `timeout`).
    func save(_ name: String, value: Int, on node: NodeProcess, timeout: Duration = .seconds(30)) async throws
        -> TestHTTP.Answer
    {
        try await modify(
            "forceReplace", ["recordName": name, "recordType": "Item", "fields": ["n": ["value": value]]], on: node,
            timeout: timeout)
    }

    /// One `records/modify` operation of `type` on `record` in `node`'s default zone; the answer.
    func modify(_ type: String, _ record: [String: Any], on node: NodeProcess, timeout: Duration = .seconds(30))
        async throws -> TestHTTP.Answer
    {
        try await TestHTTP.request(
            privateURL(node, "records/modify"), method: .POST,
            body: ["operations": [["operationType": type, "record": record]]], timeout: timeout)
    }

    /// Writes to `node` from `writers` tasks until `control` is stopped, counting each
    /// save that succeeded in `control` as it lands; returns how many did.
    func writeLoad(on node: NodeProcess, writers: Int = 4, control: LoadControl) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var done = 0
                    var index = 0
                    while !control.isStopped {
                        index += 1
                        if let answer = try? await self.save("w\(writer)-\(index % 500)", value: index, on: node),
                            answer.status == 200
                        {
                            done += 1
                            control.countSave()
                        } else {
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                    }
                    return done
                }
            }
            return await group.reduce(0, +)
        }
    }
}

/// Between a test and its background write load: the test stops the load, and
/// reads how many saves have succeeded so far, to wait for writes rather than for time.
final class LoadControl: Sendable {
    private let stopped = Atomic(false)
    private let succeeded = Atomic(0)
    var isStopped: Bool { stopped.load(ordering: .relaxed) }
    func stop() { stopped.store(true, ordering: .relaxed) }
    /// Saves that succeeded so far.
    var saves: Int { succeeded.load(ordering: .relaxed) }
    func countSave() { succeeded.add(1, ordering: .relaxed) }
}

extension Cluster {
    /// A member of the etcd cluster `name` on `data` (not started), advertising its own
    /// port, with `extra` arguments and `environment`; the cluster kills it when it goes.
    func member(
        _ data: String, etcd: EtcdServer, name: String = "test", dev: Bool = false, extra: [String] = [],
        environment: [String: String] = [:]
    ) -> NodeProcess {
        let port = NodeProcess.freePort()
        var arguments = [
            "serve", "--data", path(data), "--replication-secret-file", secretFile,
            "--container", Self.containerName, "--etcd", etcd.clientURL, "--cluster", name, "--node", data,
            "--advertise", "http://127.0.0.1:\(port)",
        ]
        if dev { arguments.append("--dev") }
        let node = NodeProcess(arguments + extra, port: port, logDirectory: root + "/logs", environment: environment)
        track(node)
        return node
    }

    /// `records/changes` of the default zone on `node`, since `token` (a `syncToken`).
    func zoneChanges(on node: NodeProcess, since token: String? = nil) async throws -> TestHTTP.Answer {
        var body: [String: Any] = ["zoneID": ["zoneName": "_defaultZone"]]
        if let token { body["syncToken"] = token }
        return try await TestHTTP.request(privateURL(node, "records/changes"), method: .POST, body: body)
    }

    /// The `syncToken` of the default zone's changes on `node`, now.
    func syncToken(on node: NodeProcess) async throws -> String {
        let answer = try await zoneChanges(on: node)
        guard let token = answer.json["syncToken"] as? String else {
            throw TestFailure("no syncToken from \(node.url): \(answer.status) \(answer.text)")
        }
        return token
    }

    /// The leader URL `node` follows, from its replication status (`nil`: it follows
    /// nobody, or does not answer).
    func followed(_ node: NodeProcess) async -> String? {
        let answer = try? await TestHTTP.replicationGET(node.url, "/replication/status", secret: Self.secret)
        guard let answer, answer.status == 200, answer.json["role"] as? String == "follower" else { return nil }
        return (answer.json["following"] as? [String: Any])?["leaderURL"] as? String
    }
}
