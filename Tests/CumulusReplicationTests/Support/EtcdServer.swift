@testable import CumulusReplication
import CumulusTestSupport
import Foundation

/// A private etcd for one test: its own data directory under the temporary directory,
/// client and peer ports on loopback, stopped (SIGKILL) and removed when released.
/// `make deps` installs etcd (Debian's `etcd-server`); without it the test fails and
/// says so.
final class EtcdServer: @unchecked Sendable {
    let directory: String
    let clientURL: String
    private let process: SpawnedProcess

    /// Where Debian puts it, else the first `etcd` on the PATH.
    static var binary: String? {
        let candidates = ["/usr/bin/etcd"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/etcd" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The certificates it serves TLS with, and asks clients for, if any.
    let certificates: TestCertificates?

    /// Starts etcd (with `extra` arguments; over TLS with client certificates when given
    /// `certificates`) and waits until it answers as healthy (at most 120 s: a loaded
    /// machine starts it slowly).
    init(_ label: String = #function, extra: [String] = [], certificates: TestCertificates? = nil) async throws {
        guard let binary = Self.binary else {
            throw TestFailure("etcd is not installed: `make deps` installs it (Debian's etcd-server)")
        }
        directory = ReplicationWorld.temporaryPath("etcd-" + label)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.certificates = certificates
        let directory = self.directory
        // A port found free may be taken before etcd binds it (by another process on the
        // machine): etcd then exits at once saying so, and starts again on other ports.
        var attempt = 1
        while true {
            let clientPort = NodeProcess.freePort()
            let peerPort = NodeProcess.freePort()
            let clientURL = (certificates == nil ? "http" : "https") + "://127.0.0.1:\(clientPort)"
            let peerURL = "http://127.0.0.1:\(peerPort)"
            var arguments = [
                "--name", "test", "--data-dir", directory + "/data-\(attempt)",
                "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
                "--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
                "--initial-cluster", "test=\(peerURL)", "--logger", "zap", "--log-outputs", directory + "/etcd-\(attempt).log",
            ] + extra
            if let certificates {
                arguments += [
                    "--cert-file", certificates.serverCertificate, "--key-file", certificates.serverKey,
                    "--trusted-ca-file", certificates.caFile, "--client-cert-auth",
                ]
            }
            let process = try SpawnedProcess.start(binary, arguments, output: .discard, errors: .discard)
            do {
                try await Self.waitUntilHealthy(process, clientURL: clientURL, certificates: certificates)
                self.process = process
                self.clientURL = clientURL
                return
            } catch is ExitedAtStart {
                let log = (try? String(contentsOfFile: directory + "/etcd-\(attempt).log", encoding: .utf8)) ?? ""
                guard log.contains("address already in use"), attempt < 3 else {
                    // The lines that say why, not the start-up chatter before them.
                    let why = log.split(separator: "\n").filter { $0.contains("\"error\"") || $0.contains("\"fatal\"") }
                    throw TestFailure("etcd exited at start: \((why.isEmpty ? [Substring(log.suffix(2000))] : why).joined(separator: "\n"))")
                }
                attempt += 1
            }
        }
    }

    /// etcd's process ended before it answered.
    private struct ExitedAtStart: Error {}

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Kills etcd without warning.
    func kill() {
        guard process.isRunning else { return }
        process.send(SIGKILL)
        process.waitForExit()
    }

    /// Freezes etcd (SIGSTOP): connections stay open and nothing answers.
    func pause() { process.send(SIGSTOP) }

    /// Thaws it (SIGCONT).
    func resume() { process.send(SIGCONT) }

    /// The root user's password once ``enableAuthentication()`` ran.
    static let rootPassword = "etcd-root-password"

    /// Turns on etcd's authentication (`etcdctl user add root; auth enable`, through the
    /// gateway): from now on every call needs user `root` and ``rootPassword``.
    func enableAuthentication() async throws {
        for (path, body) in [
            ("/v3/auth/role/add", ["name": "root"]),
            ("/v3/auth/user/add", ["name": "root", "password": Self.rootPassword]),
            ("/v3/auth/user/grant", ["user": "root", "role": "root"]),
            ("/v3/auth/enable", [:]),
        ] {
            let answer = try await TestHTTP.request(clientURL + path, method: .POST, body: body, timeout: .seconds(10))
            guard answer.status == 200 else { throw TestFailure("etcd \(path): \(answer.status) \(answer.text)") }
        }
    }

    /// A token for `root` (after ``enableAuthentication()``).
    func rootToken() async throws -> String {
        let answer = try await TestHTTP.request(
            clientURL + "/v3/auth/authenticate", method: .POST, body: ["name": "root", "password": Self.rootPassword])
        guard let token = answer.json["token"] as? String else { throw TestFailure("no token: \(answer.text)") }
        return token
    }

    /// Makes etcd forget every token it gave (authentication off and on again), as a
    /// restart of the member does.
    func forgetTokens() async throws {
        let token = try await rootToken()
        for path in ["/v3/auth/disable", "/v3/auth/enable"] {
            let headers = path.hasSuffix("disable") ? ["Authorization": token] : [:]
            let answer = try await TestHTTP.request(clientURL + path, method: .POST, body: [:], headers: headers)
            guard answer.status == 200 else { throw TestFailure("etcd \(path): \(answer.status) \(answer.text)") }
        }
    }

    private static func waitUntilHealthy(
        _ process: SpawnedProcess, clientURL: String, certificates: TestCertificates?
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        // Asked once more after the deadline: this task may wake from its sleep late.
        var last = false
        while !last {
            last = ContinuousClock.now >= deadline
            guard process.isRunning else { throw ExitedAtStart() }
            if let certificates {
                // Only a client with a certificate of its CA is answered.
                if (try? await EtcdClient(endpoints: [clientURL], access: certificates.etcdAccess()).get("/health")) != nil {
                    return
                }
            } else if let answer = try? await TestHTTP.request(clientURL + "/health", timeout: .seconds(2)),
                answer.text.contains("\"health\":\"true\"")
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.send(SIGKILL)
        throw TestFailure("etcd did not become healthy within 120 s at \(clientURL)")
    }
}

extension EtcdClient {
    /// Puts `value` under `key` bound to a new lease of `ttl`, and returns the lease. A
    /// short lease can end before the put reaches etcd on a loaded machine; then it
    /// tries again with a new one (up to 20 times).
    func putUnderNewLease(_ key: String, _ value: [UInt8], ttl: Duration) async throws -> Int64 {
        for _ in 0..<20 {
            let lease = try await grantLease(ttl: ttl)
            do {
                try await put(key, value, lease: lease.id)
                return lease.id
            } catch CoordinationError.refused(let why) where why.contains("lease not found") {
                continue
            }
        }
        throw TestFailure("every lease of \(ttl) ended before a put under it reached etcd")
    }
}

extension TestCertificates {
    /// How a client that trusts the CA and presents the client certificate reaches etcd
    /// (`withCertificate` false: the CA alone).
    func etcdAccess(withCertificate: Bool = true) throws -> EtcdAccess {
        EtcdAccess(
            tls: try EtcdAccess.tls(
                caFile: caFile, certificateFile: withCertificate ? clientCertificate : nil,
                keyFile: withCertificate ? clientKey : nil))
    }
}
