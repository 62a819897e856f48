import CumulusTestSupport
import Foundation

/// A throw-away CA, a server certificate for 127.0.0.1 and a client certificate, made
/// with `openssl` in a directory of their own, for an etcd spoken to over TLS. PEM files,
/// EC P-256 keys; removed when released. The server's is for client use too: etcd 3.4's
/// JSON gateway presents it when it calls etcd's own gRPC service.
final class TestCertificates: @unchecked Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }

    init(_ label: String = #function) throws {
        directory = ReplicationWorld.temporaryPath("certificates-" + label)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        let directory = self.directory
        func file(_ name: String) -> String { directory + "/" + name }
        try run(["req", "-x509"] + key + [
            "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=cumulus-test-ca",
        ])
        for (name, usage) in [("server", "serverAuth,clientAuth"), ("client", "clientAuth")] {
            try run(["req"] + key + ["-keyout", file("\(name).key"), "-out", file("\(name).csr"), "-subj", "/CN=\(name)"])
            try Data("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=\(usage)\n".utf8)
                .write(to: URL(fileURLWithPath: file("\(name).ext")))
            try run([
                "x509", "-req", "-in", file("\(name).csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"),
                "-CAcreateserial", "-out", file("\(name).pem"), "-days", "2", "-extfile", file("\(name).ext"),
            ])
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    private func run(_ arguments: [String]) throws {
        let status = try SpawnedProcess.start(
            "/usr/bin/openssl", arguments, output: .discard, errors: .discard
        ).waitForExit()
        guard status == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) exited with \(status)")
        }
    }
}
