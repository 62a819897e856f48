import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// A client of etcd's v3 API through its JSON gateway (`/v3/…` on the client URL),
/// over AsyncHTTPClient: the key-value calls, leases and watches that leader election
/// needs, and nothing else.
///
/// The mirror has no etcd library for Swift, and the gateway is part of every etcd
/// since 3.3, so this speaks it directly. **Endpoints**: a call goes to the endpoint
/// that answered last; when it cannot be reached the next is tried, once round the list,
/// before the call fails with ``CoordinationError/unreachable(_:)``. A call etcd
/// answers with an error is not retried elsewhere.
///
/// **Thread safety**: every method may be called from any task at once.
public final class EtcdClient: Sendable {
    /// The client URLs, e.g. `http://127.0.0.1:2379`.
    public let endpoints: [String]
    /// AsyncHTTPClient's process-wide client: it needs no shutdown, so an `EtcdClient`
    /// dropped on any path (a failed start, a test that throws) cannot bring the process
    /// down, as an unclosed `HTTPClient` of its own does. Every call has its own deadline.
    private var client: HTTPClient { HTTPClient.shared }
    private let preferred = Mutex(0)
    private let requestTimeout: Duration
    private let access: EtcdAccess
    /// The auth token each endpoint gave, by index (simple tokens are per member).
    private let tokens = Mutex<[Int: String]>([:])

    /// Largest answer read from a unary call: leader-election keys are small.
    static let maxResponseBytes = 4 << 20

    /// A client of the etcd cluster at `endpoints`; each call must be answered within
    /// `requestTimeout`, authenticating and checking etcd as `access` says.
    public init(endpoints: [String], requestTimeout: Duration = .seconds(2), access: EtcdAccess = .plain) {
        precondition(!endpoints.isEmpty, "an etcd client needs at least one endpoint")
        self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.requestTimeout = requestTimeout
        self.access = access
    }

    /// Nothing to close (the HTTP client is the process-wide one); kept so callers end
    /// a client's use in one place whatever it holds.
    public func shutdown() async {}

    // MARK: Keys

    /// The key `key`, or `nil`, and the store's revision when it was read.
    public func get(_ key: String) async throws -> (value: EtcdKeyValue?, revision: Int64) {
        let response: EtcdGateway.RangeResponse = try await call("/v3/kv/range", EtcdGateway.range(Array(key.utf8)))
        let values = try (response.kvs ?? []).map { try $0.decoded() }
        return (values.first, try EtcdGateway.integer(response.header?.revision, "header.revision"))
    }

    /// Every key starting with `prefix`, in key order.
    public func get(prefix: String) async throws -> [EtcdKeyValue] {
        let start = Array(prefix.utf8)
        let response: EtcdGateway.RangeResponse = try await call(
            "/v3/kv/range", EtcdGateway.range(start, end: Self.prefixEnd(start)))
        return try (response.kvs ?? []).map { try $0.decoded() }
    }

    /// Writes `value` under `key`, bound to `lease` if given.
    public func put(_ key: String, _ value: [UInt8], lease: Int64? = nil) async throws {
        let _: EtcdGateway.RangeResponse = try await call("/v3/kv/put", EtcdGateway.put(Array(key.utf8), value, lease: lease))
    }

    /// Deletes `key` (no error if it does not exist).
    public func delete(_ key: String) async throws {
        let _: EtcdGateway.RangeResponse = try await call("/v3/kv/deleterange", EtcdGateway.deleteRange(Array(key.utf8)))
    }

    /// Runs `transaction` atomically.
    public func run(_ transaction: EtcdTransaction) async throws -> EtcdTransaction.Outcome {
        let response: EtcdGateway.TransactionResponse = try await call("/v3/kv/txn", EtcdGateway.transaction(transaction))
        let succeeded = response.succeeded ?? false
        let branch = succeeded ? transaction.success : transaction.failure
        let answers = response.responses ?? []
        guard answers.count == branch.count else {
            throw CoordinationError.protocolViolation("a transaction of \(branch.count) operations answered \(answers.count)")
        }
        var reads: [EtcdKeyValue?] = []
        for (operation, answer) in zip(branch, answers) {
            guard case .get = operation else { continue }
            guard let range = answer.response_range else {
                throw CoordinationError.protocolViolation("a read in a transaction answered without its range")
            }
            reads.append(try range.kvs?.first?.decoded())
        }
        return EtcdTransaction.Outcome(
            succeeded: succeeded, reads: reads, revision: try EtcdGateway.integer(response.header?.revision, "header.revision"))
    }

    // MARK: Leases

    /// A new lease of about `ttl` (etcd counts in whole seconds, at least one); its ID
    /// and the TTL etcd granted.
    public func grantLease(ttl: Duration) async throws -> (id: Int64, ttl: Duration) {
        let seconds = max(1, (ttl.milliseconds + 999) / 1000)
        let response: EtcdGateway.LeaseResponse = try await call("/v3/lease/grant", EtcdGateway.leaseGrant(ttlSeconds: seconds))
        if let error = response.error, !error.isEmpty { throw CoordinationError.refused(error) }
        let id = try EtcdGateway.integer(response.ID, "ID")
        let granted = try EtcdGateway.integer(response.TTL, "TTL")
        guard id != 0, granted > 0 else { throw CoordinationError.protocolViolation("a lease grant without an ID or TTL") }
        return (id, .seconds(granted))
    }

    /// Renews `lease`: the TTL it now has, or `nil` if etcd no longer has it (it
    /// expired, or was revoked).
    public func keepAlive(_ lease: Int64) async throws -> Duration? {
        // The gateway maps the streaming call to one request: one renewal in, one
        // answer out, then the stream ends.
        let response: EtcdGateway.Streamed<EtcdGateway.LeaseResponse> = try await call(
            "/v3/lease/keepalive", EtcdGateway.lease(lease))
        if let failure = response.error { throw CoordinationError.refused(failure.text) }
        guard let result = response.result else { throw CoordinationError.protocolViolation("a keep-alive without a result") }
        let ttl = try EtcdGateway.integer(result.TTL, "TTL")
        return ttl > 0 ? .seconds(ttl) : nil
    }

    /// Ends `lease` now, deleting every key bound to it (no error if it is gone).
    public func revoke(_ lease: Int64) async throws {
        do {
            let _: EtcdGateway.LeaseResponse = try await call("/v3/lease/revoke", EtcdGateway.lease(lease))
        } catch CoordinationError.refused(let why) where why.contains("not found") {
            return
        }
    }

    // MARK: Watches

    /// The changes to `key` from `revision` on (0: from now), until the stream is
    /// cancelled or fails. A watch that etcd cancels (its start revision compacted
    /// away) ends with ``CoordinationError/refused(_:)``; a broken connection with
    /// ``CoordinationError/unreachable(_:)``. Callers read the key again and watch
    /// anew from after that read.
    public func watch(_ key: String, from revision: Int64 = 0) -> AsyncThrowingStream<EtcdWatchEvent, Error> {
        let body = EtcdGateway.watch(Array(key.utf8), from: revision)
        let data = (try? JSONSerialization.data(withJSONObject: body)) ?? Data()
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let response = try await self.send("/v3/watch", data, using: self.client, deadline: .hours(24 * 365))
                    var lines = JSONLines()
                    for try await chunk in response.body {
                        lines.append(chunk.readableBytesView)
                        while let line = try lines.next() {
                            let message: EtcdGateway.Streamed<EtcdGateway.WatchResponse>
                            do {
                                message = try JSONDecoder().decode(EtcdGateway.Streamed<EtcdGateway.WatchResponse>.self, from: line)
                            } catch {
                                throw CoordinationError.protocolViolation("a watch message is not JSON: \(error)")
                            }
                            if let failure = message.error { throw CoordinationError.refused(failure.text) }
                            guard let result = message.result else { continue }
                            if result.canceled == true {
                                throw CoordinationError.refused(
                                    "the watch was cancelled: \(result.cancel_reason ?? "compacted at \(result.compact_revision ?? "?")")")
                            }
                            for event in result.events ?? [] { continuation.yield(try event.decoded()) }
                        }
                    }
                    continuation.finish(throwing: CoordinationError.unreachable("the watch stream ended"))
                } catch let error as CoordinationError {
                    continuation.finish(throwing: error)
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: CoordinationError.unreachable("the watch broke: \(error)"))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: HTTP

    /// The end of the range of keys starting with `prefix`: the prefix with its last
    /// byte below 0xFF raised by one (etcd's `WithPrefix`).
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]  // every key
    }

    private func call<Response: Decodable>(_ path: String, _ body: [String: Any]) async throws -> Response {
        let data: Data
        do {
            data = try JSONSerialization.data(withJSONObject: body)
        } catch {
            throw CoordinationError.protocolViolation("cannot encode a request to \(path): \(error)")
        }
        let response = try await send(path, data, using: client, deadline: .milliseconds(requestTimeout.milliseconds))
        let bytes: ByteBuffer
        do {
            bytes = try await response.body.collect(upTo: Self.maxResponseBytes)
        } catch {
            throw CoordinationError.unreachable("\(path): \(error)")
        }
        do {
            return try JSONDecoder().decode(Response.self, from: Data(bytes.readableBytesView))
        } catch {
            throw CoordinationError.protocolViolation("\(path) answered \(String(buffer: bytes).prefix(200)): \(error)")
        }
    }

    /// Sends `body` to `path` on the preferred endpoint, moving on to the next when one
    /// cannot be reached; an error answer is thrown as ``CoordinationError/refused(_:)``.
    private func send(_ path: String, _ body: Data, using client: HTTPClient, deadline: TimeAmount) async throws
        -> HTTPClientResponse
    {
        let first = preferred.withLock { $0 }
        var failures: [String] = []
        endpoints: for offset in 0..<endpoints.count {
            let index = (first + offset) % endpoints.count
            // A token etcd refuses is replaced once, then the refusal stands.
            for attempt in 0..<2 {
                let response: HTTPClientResponse
                do {
                    let token = try await token(at: index, renew: attempt > 0, deadline: deadline)
                    response = try await post(endpoints[index] + path, body, token: token, using: client, deadline: deadline)
                } catch is CancellationError {
                    throw CancellationError()
                } catch let error as CoordinationError where !error.isTransient {
                    throw error
                } catch {
                    failures.append("\(endpoints[index]): \(error)")
                    continue endpoints
                }
                preferred.withLock { $0 = index }
                guard response.status == .ok else {
                    let text = (try? await response.body.collect(upTo: 1 << 16)).map { String(buffer: $0) } ?? ""
                    let failure = try? JSONDecoder().decode(EtcdGateway.Failure.self, from: Data(text.utf8))
                    if failure?.isUnauthenticated == true, access.credentials != nil, attempt == 0 { continue }
                    // 503 and the like: that member cannot serve now (no quorum, stopping).
                    if response.status.code >= 500, failure == nil {
                        failures.append("\(endpoints[index]): HTTP \(response.status.code)")
                        continue endpoints
                    }
                    throw CoordinationError.refused(failure?.text ?? "HTTP \(response.status.code) \(text.prefix(200))")
                }
                return response
            }
        }
        throw CoordinationError.unreachable(failures.joined(separator: "; "))
    }

    /// The auth token for endpoint `index`: `nil` without credentials; the one it gave
    /// before unless `renew`; else a new one (`/v3/auth/authenticate`). Wrong
    /// credentials are ``CoordinationError/refused(_:)``, which no retry mends.
    private func token(at index: Int, renew: Bool, deadline: TimeAmount) async throws -> String? {
        guard let credentials = access.credentials else { return nil }
        if !renew, let token = tokens.withLock({ $0[index] }) { return token }
        let body = try JSONSerialization.data(withJSONObject: EtcdGateway.authenticate(credentials.user, credentials.password))
        let response = try await post(endpoints[index] + "/v3/auth/authenticate", body, token: nil, using: client, deadline: deadline)
        let bytes: ByteBuffer
        do {
            bytes = try await response.body.collect(upTo: 1 << 16)
        } catch {
            throw CoordinationError.unreachable("\(endpoints[index])/v3/auth/authenticate: \(error)")
        }
        if response.status != .ok {
            let failure = try? JSONDecoder().decode(EtcdGateway.Failure.self, from: Data(bytes.readableBytesView))
            if response.status.code >= 500, failure == nil {
                throw CoordinationError.unreachable("\(endpoints[index]): HTTP \(response.status.code)")
            }
            throw CoordinationError.refused(
                "etcd did not take user \(credentials.user) and its password: \(failure?.text ?? "HTTP \(response.status.code)")")
        }
        guard let token = (try? JSONDecoder().decode(EtcdGateway.AuthenticateResponse.self, from: Data(bytes.readableBytesView)))?.token,
            !token.isEmpty
        else {
            throw CoordinationError.protocolViolation("etcd answered /v3/auth/authenticate without a token")
        }
        tokens.withLock { $0[index] = token }
        return token
    }

    /// One POST of JSON, with the token and TLS settings; a failure to connect or to
    /// be answered is ``CoordinationError/unreachable(_:)``.
    private func post(_ url: String, _ body: Data, token: String?, using client: HTTPClient, deadline: TimeAmount)
        async throws -> HTTPClientResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: token) }
        request.tlsConfiguration = access.tls
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            return try await client.execute(request, timeout: deadline)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw CoordinationError.unreachable("\(error)")
        }
    }
}

/// Splits a byte stream into its newline-ended JSON messages (the gateway writes one
/// message per line on a streaming call).
struct JSONLines {
    private var buffer: [UInt8] = []
    /// A stream that sends more than this without a newline is not the gateway's.
    static let maxLine = 16 << 20

    mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// The next whole line, without its newline; `nil` until one has arrived.
    mutating func next() throws -> Data? {
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            let line = Data(buffer[..<newline])
            buffer.removeSubrange(...newline)
            if !line.allSatisfy({ $0 == 32 || $0 == 13 }) { return line }
        }
        guard buffer.count <= Self.maxLine else { throw CoordinationError.protocolViolation("a streamed message over 16 MiB") }
        return nil
    }
}
