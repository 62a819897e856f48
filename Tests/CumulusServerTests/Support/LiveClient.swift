import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// An answer a ``LiveClient`` received.
struct LiveResponse: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: ByteBuffer
}

/// The client of a live server in a socket test: HummingbirdTesting's `TestClient` over
/// the port `test(.live)` started, with a read timeout of ``timeout`` instead of the
/// framework's 20 s. A test waits for what it asserts: on a loaded machine (the whole
/// suite in parallel on two cores, a fuzzer beside it) one answer took longer than
/// 20 s, and a test must not fail for that.
struct LiveClient: Sendable {
    /// How long a request waits for its answer before the test fails.
    static let timeout: Duration = .seconds(600)

    let client: TestClient
    /// The server's port.
    let port: Int?

    /// Sends a request and hands its answer to `check`.
    @discardableResult
    func execute<Value>(
        uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
        testCallback check: (LiveResponse) async throws -> Value = { $0 }
    ) async throws -> Value {
        var headers = headers
        headers[.connection] = "keep-alive"
        let response = try await client.execute(
            TestClient.Request(uri, method: method, authority: "localhost", headers: headers, body: body))
        return try await check(
            LiveResponse(status: response.status, headers: response.headers, body: response.body ?? ByteBuffer()))
    }
}

extension ApplicationProtocol {
    /// Runs `body` against this application served live (`test(.live)`), through a
    /// ``LiveClient``.
    func testLive<Value: Sendable>(_ body: @Sendable (LiveClient) async throws -> Value) async throws -> Value {
        try await test(.live) { framework in
            let port = try #require(framework.port)
            let client = TestClient(host: "localhost", port: port, configuration: .init(timeout: LiveClient.timeout))
            client.connect()
            do {
                let value = try await body(LiveClient(client: client, port: port))
                try await client.shutdown()
                return value
            } catch {
                try? await client.shutdown()
                throw error
            }
        }
    }
}
