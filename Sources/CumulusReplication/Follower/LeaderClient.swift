import AsyncHTTPClient
import Crypto
import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Synchronization

/// The follower's HTTP client for its leader's `/replication/*` endpoints
/// (AsyncHTTPClient). Classifies failures: refusals and divergence are final,
/// anything else is ``ReplicationError/unreachable(_:)`` and retried.
///
/// The secret never leaves this process: before its first request the client shakes
/// hands (``ReplicationHandshake``), and it sends nothing more to a node that cannot
/// prove it holds the same secret. Later requests present the session's proof; a
/// node that forgot the session answers 401 and the client shakes hands again.
public final class LeaderClient: Sendable {
    /// The leader's base URL, e.g. `http://10.0.0.1:8765`.
    public let leaderURL: String
    let secret: String
    /// The largest asset file fetched: this node's `--max-asset-bytes`, which must be at
    /// least the leader's, or a file the leader took cannot reach this node.
    public let maxAssetBytes: Int64
    let client: HTTPClient
    /// For snapshots: the leader writes its copy before it answers, which can take
    /// minutes for a large environment, so the read timeout is long.
    let snapshotClient: HTTPClient
    /// The session of the last handshake, until the leader forgets it.
    private let credentials = Mutex<ReplicationHandshake.Credentials?>(nil)

    /// A client for the leader at `leaderURL`, proving `secret`. An idle stream
    /// (no message, not even a heartbeat, for `readTimeout`) is dropped and reopened.
    public init(
        leaderURL: String, secret: String, maxAssetBytes: Int64 = Container.defaultMaxAssetBytes,
        readTimeout: Duration = .seconds(10)
    ) {
        self.leaderURL = leaderURL.hasSuffix("/") ? String(leaderURL.dropLast()) : leaderURL
        self.secret = secret
        self.maxAssetBytes = maxAssetBytes
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(
            connect: .seconds(5), read: .milliseconds(readTimeout.milliseconds))
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        configuration.timeout.read = .minutes(30)
        snapshotClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// Closes the connections.
    public func shutdown() async {
        try? await client.shutdown()
        try? await snapshotClient.shutdown()
    }

    /// The leader's identity and head. A follower says its name and epoch, so a
    /// leader that was superseded learns it.
    public func hello(follower: String? = nil, epoch: UInt64? = nil) async throws -> ReplicationHello {
        var query: [(ReplicationRoute.Parameter, String)] = []
        if let follower, let epoch { query = [(.follower, follower), (.epoch, String(epoch))] }
        let bytes = try await fetch(.hello, query, limit: 1 << 16)
        do {
            return try JSONDecoder().decode(ReplicationHello.self, from: Data(bytes))
        } catch {
            throw ReplicationError.protocolViolation("the leader's hello is not valid JSON: \(error)")
        }
    }

    /// The leader's credentials and server secret.
    public func configuration() async throws -> ReplicatedConfiguration {
        var decoder = ReplicationMessageDecoder()
        decoder.append(try await fetch(.configuration, limit: ReplicationMessage.maxLength))
        guard case .configuration(let configuration) = try decoder.next() else {
            throw ReplicationError.protocolViolation("the leader sent no configuration")
        }
        return configuration
    }

    /// Reports the last sequence this follower applied.
    public func report(follower: String, applied: UInt64) async throws {
        _ = try await fetch(.ack, [(.follower, follower), (.applied, String(applied))], limit: 1 << 16)
    }

    /// The bytes of the asset file named `checksum`, checked against it:
    /// ``ReplicationError/unreachable(_:)`` (retried) if the leader cannot send it or
    /// sends other bytes. A body over ``maxAssetBytes`` is refused while it arrives,
    /// before it is all held (``ReplicationError/refused(_:)``: replication stops, as
    /// this node could never take the file).
    public func asset(_ checksum: AssetChecksum) async throws -> [UInt8] {
        let bytes = try await fetch(
            .asset, [(.checksum, checksum.hex)], limit: Int(maxAssetBytes),
            tooLong: ", this node's largest asset; give every node the same --max-asset-bytes")
        guard Array(SHA256.hash(data: bytes)) == checksum.bytes else {
            throw ReplicationError.unreachable("\(leaderURL) sent bytes for asset \(checksum) that hash to something else")
        }
        return bytes
    }

    /// Any node's replication status (`cumulus status`).
    public func status() async throws -> ReplicationStatus {
        let bytes = try await fetch(.status, limit: 16 << 20)
        do {
            return try JSONDecoder().decode(ReplicationStatus.self, from: Data(bytes))
        } catch {
            throw ReplicationError.protocolViolation("the status is not valid JSON: \(error)")
        }
    }

    /// Opens the frame stream after `after` (whose chain hash is `hash`) and calls
    /// `body` with each received chunk until the stream ends or `body` throws.
    public func stream(
        follower: String, identity: LogStore.Identity, after: UInt64, hash: [UInt8], opened: () throws -> Void = {},
        _ body: ([UInt8]) async throws -> Void
    ) async throws {
        let target = ReplicationRoute.stream.target([
            (.follower, follower), (.logID, Hex.encode(identity.logID)), (.epoch, String(identity.epoch)),
            (.after, String(after)), (.hash, Hex.encode(hash)),
        ])
        let response = try await open(target, method: .GET)
        try await check(response)
        try opened()
        do {
            for try await chunk in response.body { try await body(Array(chunk.readableBytesView)) }
        } catch let error as ReplicationError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ReplicationError.unreachable("the stream broke: \(error)")
        }
    }

    /// Downloads a snapshot of the leader's environment into `file`; returns its size.
    public func downloadSnapshot(to file: String, progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> Int {
        let response = try await open(ReplicationRoute.snapshot.target(), method: .GET, using: snapshotClient, deadline: .hours(24))
        try await check(response)
        // A leader sends its copy while writing it, so it does not know the size: the
        // chunked response's end says the copy is whole (and a copy that fails ends the
        // response without it). Leaders before that sent the size; it is still checked.
        let expected = response.headers.first(name: "x-cumulus-snapshot-bytes").flatMap(Int.init) ?? -1
        let descriptor = createPrivateFile(file)
        guard descriptor >= 0 else {
            throw ReplicationError.refused("cannot write the snapshot to \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var received = 0
        do {
            // Each chunk goes from the response's buffer to the file, with no copy
            // between: a snapshot is the leader's whole environment.
            for try await chunk in response.body {
                try chunk.withUnsafeReadableBytes { try Self.writeAll($0, to: descriptor) }
                received += chunk.readableBytes
                progress?(received, expected)
            }
            guard fsync(descriptor) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            throw ReplicationError.unreachable("the snapshot download broke after \(received) bytes: \(error)")
        }
        guard expected < 0 || received == expected else {
            throw ReplicationError.unreachable("the snapshot ended after \(received) of \(expected) bytes")
        }
        return received
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let wrote = write(descriptor, base + done, bytes.count - done)
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            done += wrote
        }
    }

    // MARK: - HTTP

    private func open(
        _ path: String, method: HTTPMethod, using client: HTTPClient? = nil, deadline: TimeAmount = .hours(1)
    ) async throws -> HTTPClientResponse {
        // A session the leader forgot (it restarted, or the session idled out) is
        // answered 401: shake hands once more, then give up on this request.
        for attempt in 0..<2 {
            let session = try await session(renew: attempt > 0)
            var request = HTTPClientRequest(url: leaderURL + path)
            request.method = method
            for (name, value) in session.headers { request.headers.add(name: name, value: value) }
            let response = try await execute(request, using: client ?? self.client, deadline: deadline)
            if response.status.code == ReplicationRoute.unknownSessionStatus, attempt == 0 { continue }
            return response
        }
        throw ReplicationError.refused("\(leaderURL) forgot the replication session as soon as it was made")
    }

    /// The current session, shaking hands first if there is none (or `renew`).
    private func session(renew: Bool) async throws -> ReplicationHandshake.Credentials {
        if !renew, let current = credentials.withLock({ $0 }) { return current }
        let initiator = ReplicationHandshake.Initiator(secret: secret)
        let target = ReplicationRoute.handshake.target([(.nonce, Hex.encode(initiator.nonce))])
        var request = HTTPClientRequest(url: leaderURL + target)
        request.method = .POST
        let response = try await execute(request, using: client, deadline: .seconds(30))
        try await check(response)
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: 1 << 12)
        } catch {
            throw ReplicationError.unreachable("\(leaderURL)\(ReplicationRoute.handshake.target()): \(error)")
        }
        guard let answer = try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView)),
            let nonce = answer["nonce"].flatMap(Hex.decode), let proof = answer["proof"].flatMap(Hex.decode)
        else {
            throw ReplicationError.refused("\(leaderURL) answered the handshake without a nonce and a proof")
        }
        let session: ReplicationHandshake.Credentials
        do {
            session = try initiator.finish(responderNonce: nonce, responderProof: proof)
        } catch {
            guard case .refused(let why) = error else { throw error }
            throw ReplicationError.refused("\(leaderURL): \(why)")
        }
        credentials.withLock { $0 = session }
        return session
    }

    private func execute(_ request: HTTPClientRequest, using client: HTTPClient, deadline: TimeAmount) async throws
        -> HTTPClientResponse
    {
        do {
            // Streams reconnect now and then; the read timeout catches a silent leader.
            return try await client.execute(request, timeout: deadline)
        } catch {
            throw ReplicationError.unreachable("\(leaderURL): \(error)")
        }
    }

    /// The body of `path`, refused as it arrives once it passes `limit` bytes: a body
    /// that long is final (``ReplicationError/refused(_:)``, `tooLong` saying what to
    /// do), as asking again brings the same bytes.
    private func fetch(
        _ route: ReplicationRoute, _ query: [(ReplicationRoute.Parameter, String)] = [], limit: Int, tooLong: String = ""
    ) async throws -> [UInt8] {
        let path = route.target(query)
        let response = try await open(path, method: HTTPMethod(rawValue: route.method))
        try await check(response)
        do {
            return Array(try await response.body.collect(upTo: limit).readableBytesView)
        } catch is NIOTooManyBytesError {
            throw ReplicationError.refused("\(leaderURL)\(path) sent more than \(limit) bytes\(tooLong)")
        } catch {
            throw ReplicationError.unreachable("\(leaderURL)\(path): \(error)")
        }
    }

    /// Turns an error answer into the error it names.
    private func check(_ response: HTTPClientResponse) async throws {
        guard response.status != .ok else { return }
        let body = (try? await response.body.collect(upTo: 1 << 16)).map { String(buffer: $0) } ?? ""
        let reason = (try? JSONDecoder().decode([String: String].self, from: Data(body.utf8)))?["reason"] ?? body
        throw ReplicationError(status: Int(response.status.code), reason: reason, node: leaderURL)
    }
}

/// Creates (or empties) `path` for writing, private to its owner; a descriptor, or -1
/// with `errno` set. At file scope, where `open` is the C call, not ``LeaderClient``'s.
private func createPrivateFile(_ path: String) -> Int32 {
    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(FilePermissions.file))
}
