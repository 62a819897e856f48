import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A small HTTP client for multi-process tests.
enum TestHTTP {
    static let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)

    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
    }

    static func request(
        _ url: String, method: HTTPMethod = .GET, body: [String: Any]? = nil, headers: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await client.execute(request, timeout: .seconds(timeout.components.seconds))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name.lowercased()] = header.value }
        return Answer(status: Int(response.status.code), headers: fields, body: Array(bytes.readableBytesView))
    }

    /// Polls `url`'s `/healthz` until it answers; the log head it reports.
    @discardableResult
    static func waitUntilUp(_ url: String, timeout: Duration = .seconds(60)) async throws -> UInt64 {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let answer = try? await request(url + "/healthz", timeout: .seconds(2)), answer.status == 200 {
                return UInt64(answer.json["logHead"] as? Int ?? 0)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(url) did not come up within \(timeout)")
    }

    /// The head `/healthz` reports, or `nil` if the node does not answer.
    static func head(_ url: String) async -> UInt64? {
        guard let answer = try? await request(url + "/healthz", timeout: .seconds(2)), answer.status == 200 else { return nil }
        return (answer.json["logHead"] as? Int).map(UInt64.init)
    }

    /// Polls until `url`'s head reaches `sequence`.
    static func waitForHead(_ url: String, atLeast sequence: UInt64, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        var last: UInt64?
        while ContinuousClock.now < deadline {
            last = await head(url)
            if let last, last >= sequence { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("\(url) reached \(last.map(String.init) ?? "nothing"), not \(sequence), within \(timeout)")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
