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
        try run(["req", "-x509"] + key + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=cumulus-test-ca"])
        for (name, usage) in [("server", "serverAuth,clientAuth"), ("client", "clientAuth")] {
            try run(["req"] + key + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
            try Data("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=\(usage)\n".utf8)
                .write(to: URL(fileURLWithPath: directory + "/\(name).ext"))
            try run([
                "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext",
            ])
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    private func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}
