@testable import CumulusReplication
import Foundation
import Testing

/// The etcd client against an etcd that requires a password (`auth enable`), or TLS
/// with client certificates.
@Suite struct EtcdAccessTests {
    static let root = EtcdAccess(credentials: ("root", EtcdServer.rootPassword))

    /// A private etcd with authentication enabled, and a client of it as `root`.
    static func authenticatedEtcd(_ label: String = #function) async throws -> (EtcdServer, EtcdClient) {
        let etcd = try await EtcdServer(label)
        try await etcd.enableAuthentication()
        return (etcd, EtcdClient(endpoints: [etcd.clientURL], access: root))
    }

    @Test("with the user and password a client reads, writes and watches; without them, or with a wrong one, it is refused")
    func credentialsRequired() async throws {
        let (etcd, client) = try await Self.authenticatedEtcd()
        try await client.put("/t/a", Array("one".utf8))
        #expect(try await client.get("/t/a").value?.value == Array("one".utf8))
        let lease = try await client.grantLease(ttl: .seconds(30))
        #expect(try await client.keepAlive(lease.id) != nil)
        let (_, revision) = try await client.get("/t/a")
        var changes = client.watch("/t/a", from: revision + 1).makeAsyncIterator()
        try await client.put("/t/a", Array("two".utf8))
        guard case .put(let changed)? = try await changes.next() else {
            Issue.record("the watch saw no put")
            return
        }
        #expect(changed.value == Array("two".utf8))

        await #expect(throws: CoordinationError.self) { try await EtcdClient(endpoints: [etcd.clientURL]).get("/t/a") }
        let wrong = EtcdClient(endpoints: [etcd.clientURL], access: EtcdAccess(credentials: ("root", "guess")))
        do {
            _ = try await wrong.get("/t/a")
            Issue.record("a wrong password read a key")
        } catch let error as CoordinationError {
            #expect(!error.isTransient, "a wrong password is final: \(error)")
            #expect(error.description.contains("did not take user root"), "\(error)")
        }
    }

    @Test("a token etcd no longer takes is replaced, and the call goes through")
    func forgottenTokenReplaced() async throws {
        let (etcd, client) = try await Self.authenticatedEtcd()
        try await client.put("/t/a", Array("one".utf8))
        let before = try await etcd.rootToken()
        try await etcd.forgetTokens()
        // Every token etcd gave is refused now, the client's too.
        let probe = try await TestHTTP.request(
            etcd.clientURL + "/v3/kv/range", method: .POST, body: ["key": "L3QvYQ=="], headers: ["Authorization": before])
        #expect(probe.status != 200, "\(probe.text)")
        #expect(try await client.get("/t/a").value?.value == Array("one".utf8))
    }

    @Test("over TLS, a client trusting etcd's CA and presenting a client certificate is served; without either it is not")
    func tlsWithClientCertificates() async throws {
        let certificates = try TestCertificates()
        let etcd = try await EtcdServer(certificates: certificates)
        let client = EtcdClient(endpoints: [etcd.clientURL], access: try certificates.etcdAccess())
        try await client.put("/t/a", Array("one".utf8))
        #expect(try await client.get("/t/a").value?.value == Array("one".utf8))

        // No client certificate: etcd ends the TLS handshake.
        let anonymous = EtcdClient(endpoints: [etcd.clientURL], access: try certificates.etcdAccess(withCertificate: false))
        await #expect(throws: CoordinationError.self) { try await anonymous.get("/t/a") }
        // The system's roots do not know the test CA: this side ends it.
        let untrusting = EtcdClient(endpoints: [etcd.clientURL])
        await #expect(throws: CoordinationError.self) { try await untrusting.get("/t/a") }
        // A file that is not PEM is refused when the settings are made.
        #expect(throws: (any Error).self) {
            try EtcdAccess.tls(caFile: certificates.directory + "/server.ext", certificateFile: nil, keyFile: nil)
        }
    }
}
