import AsyncHTTPClient
import CumulusModel
import CumulusServer
import CumulusTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOSSL
import Testing

/// The API over TLS (`serve --tls-cert --tls-key`; issue 41, item 4): a live server
/// with a self-signed certificate made by `openssl` for the test, reached by a client
/// that trusts that certificate alone, so the answer proves which certificate served it.
@Suite("The API over TLS")
struct ServerTLSTests {
    /// A self-signed P-256 certificate for `localhost` and its key, written in `directory`.
    static func makeCertificate(in directory: String, name: String = "server") throws -> (certificate: String, key: String) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (certificate, key) = (directory + "/\(name).crt", directory + "/\(name).key")
        let status = try SpawnedProcess.start(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", key, "-out", certificate,
            ], output: .inherit, errors: .discard
        ).waitForExit()
        guard status == 0 else {
            throw CumulusError(.internalError, "openssl req failed (\(status)); `make deps` installs it")
        }
        return (certificate, key)
    }

    @Test("the API answers over https with the configured certificate, hands out https URLs, and does not answer plain http")
    func apiAnswersOverHTTPS() async throws {
        let world = try APIWorld()
        let certificates = TemporaryDirectory("tls")
        defer { certificates.remove() }
        let files = try Self.makeCertificate(in: certificates.path)
        let tls = try ServerTLS(certificateFile: files.certificate, keyFile: files.key)
        let app = CumulusHTTPServer.application(api: world.api, port: 0, tls: tls, logger: Logger(label: "test"))
        try await app.test(.ahc(.https)) { testClient in
            let port = try #require(testClient.port)
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(files.certificate)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: configuration))
            do {
                let credentials = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
                let base = "https://localhost:\(port)/database/1/\(APIWorld.containerName)/development/private"
                var request = HTTPClientRequest(url: "\(base)/assets/upload?\(credentials)")
                request.method = .POST
                request.body = .bytes(ByteBuffer(string: #"{"tokens":[{"recordName":"p","recordType":"Photo","fieldName":"image"}]}"#))
                let response = try await client.execute(request, timeout: .seconds(30))
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(try await response.body.collect(upTo: 1 << 20).readableBytesView))
                // The upload URL names the scheme the client came by.
                let url = try #require(json["tokens"]?[0]?["url"]?.stringValue, "\(json)")
                #expect(url.hasPrefix("https://localhost:\(port)/"), "\(url)")

                await #expect(throws: (any Error).self) {
                    _ = try await client.execute(HTTPClientRequest(url: "http://localhost:\(port)/healthz"), timeout: .seconds(10))
                }
                try await client.shutdown()
            } catch {
                try await client.shutdown()
                throw error
            }
        }
    }

    @Test("a missing file, or a key that is not the certificate's, is refused before the server listens")
    func badFilesAreRefused() throws {
        let temporary = TemporaryDirectory("tls")
        defer { temporary.remove() }
        let directory = temporary.path
        let one = try Self.makeCertificate(in: directory, name: "one")
        let other = try Self.makeCertificate(in: directory, name: "other")
        _ = try ServerTLS(certificateFile: one.certificate, keyFile: one.key)
        #expect(throws: CumulusError.self) { try ServerTLS(certificateFile: one.certificate, keyFile: other.key) }
        #expect(throws: CumulusError.self) { try ServerTLS(certificateFile: directory + "/missing.crt", keyFile: one.key) }
        #expect(throws: CumulusError.self) { try ServerTLS(certificateFile: one.certificate, keyFile: directory + "/missing.key") }
        #expect(throws: CumulusError.self) { try ServerTLS(certificateFile: one.key, keyFile: one.key) }
    }
}
