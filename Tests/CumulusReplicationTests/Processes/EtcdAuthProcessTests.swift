import CumulusReplication
import Foundation
import Testing

/// `cumulus serve --etcd` against an etcd that requires a user and password, or TLS with
/// client certificates.
@Suite("Cluster members and etcd authentication", .serialized)
struct EtcdAuthProcessTests {
    @Test("members lead and follow through an etcd with authentication given its password; without it a node never leads")
    func membersAuthenticate() async throws {
        let etcd = try await EtcdServer()
        try await etcd.enableAuthentication()
        let cluster = try Cluster()
        let passwordFile = cluster.root + "/etcd-password"
        _ = FileManager.default.createFile(
            atPath: passwordFile, contents: Data(EtcdServer.rootPassword.utf8), attributes: [.posixPermissions: 0o600])

        // A user without its password is refused at start, naming where to put it.
        let refusal = await cluster.refusal([
            "--replication-secret-file", cluster.secretFile, "--etcd", etcd.clientURL, "--cluster", "test", "--node", "x",
            "--advertise", "http://127.0.0.1:9", "--etcd-user", "root",
        ])
        #expect(refusal?.contains("--etcd-password-file or CUMULUS_ETCD_PASSWORD") == true, "\(refusal ?? "it started")")

        // Without credentials etcd refuses every call: the node says so, and never leads.
        let anonymous = cluster.member("anonymous", etcd: etcd, dev: true)
        try anonymous.start()
        try await waitUntil("the node to report etcd's refusal: \(anonymous.stderr.suffix(2000))", timeout: .seconds(120)) {
            (anonymous.stdout + anonymous.stderr).contains("user name is empty")
        }
        anonymous.kill()
        let keys = try #require(ClusterKeys(cluster: "test"))
        let root = EtcdClient(endpoints: [etcd.clientURL], access: EtcdAccess(credentials: ("root", EtcdServer.rootPassword)))
        #expect(try await root.get(keys.leader).value == nil, "the anonymous node published itself as leader")

        // With the password from a file, the first node leads.
        let a = cluster.member("a", etcd: etcd, dev: true, extra: ["--etcd-user", "root", "--etcd-password-file", passwordFile])
        try a.start()
        try await TestHTTP.waitUntilUp(a.url)
        cluster.takeCredentials(from: a)
        try await waitUntil("a to take writes", timeout: .seconds(120)) {
            (try? await cluster.save("first", value: 1, on: a))?.status == 200
        }
        // With it from the environment, a second finds the leader through etcd and follows.
        let b = cluster.member(
            "b", etcd: etcd, extra: ["--etcd-user", "root"], environment: ["CUMULUS_ETCD_PASSWORD": EtcdServer.rootPassword])
        try b.start()
        try await waitUntil("b to follow a", timeout: .seconds(120)) { await cluster.followed(b) == a.url }
        #expect(!b.arguments.contains(EtcdServer.rootPassword))
    }

    @Test("a member leads through etcd over TLS given the CA, its certificate and key; with the CA alone it never does")
    func memberOverTLS() async throws {
        let certificates = try TestCertificates()
        let etcd = try await EtcdServer(certificates: certificates)
        let cluster = try Cluster()
        let ca = ["--etcd-ca-file", certificates.caFile]
        let refusal = await cluster.refusal([
            "--replication-secret-file", cluster.secretFile, "--etcd", etcd.clientURL, "--cluster", "test", "--node", "x",
            "--advertise", "http://127.0.0.1:9", "--etcd-cert-file", certificates.clientCertificate,
        ])
        #expect(refusal?.contains("--etcd-cert-file and --etcd-key-file go together") == true, "\(refusal ?? "it started")")

        let withoutCertificate = cluster.member("lacking", etcd: etcd, dev: true, extra: ca)
        try withoutCertificate.start()
        try await waitUntil("the node to report that etcd cannot be reached", timeout: .seconds(120)) {
            (withoutCertificate.stdout + withoutCertificate.stderr).contains("cannot get a lease from etcd")
        }
        withoutCertificate.kill()
        let keys = try #require(ClusterKeys(cluster: "test"))
        let trusted = EtcdClient(endpoints: [etcd.clientURL], access: try certificates.etcdAccess())
        #expect(try await trusted.get(keys.leader).value == nil, "a node without a certificate published itself as leader")

        let a = cluster.member(
            "a", etcd: etcd, dev: true,
            extra: ca + ["--etcd-cert-file", certificates.clientCertificate, "--etcd-key-file", certificates.clientKey])
        try a.start()
        try await TestHTTP.waitUntilUp(a.url)
        cluster.takeCredentials(from: a)
        try await waitUntil("a to take writes", timeout: .seconds(120)) {
            (try? await cluster.save("first", value: 1, on: a))?.status == 200
        }
    }
}
