import CumulusModel
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A bare TCP connection to a test server: to hold connections open, send requests
/// slowly or in pieces, and read status lines, which an HTTP client waiting for the
/// whole response cannot.
public final class RawConnection: @unchecked Sendable {
    /// The socket.
    public let descriptor: Int32

    /// Connects to `127.0.0.1:port`. `receiveBuffer`, when given, is the socket's
    /// receive buffer (`SO_RCVBUF`, set before connecting so the window stays small):
    /// a client that reads nothing then stalls a server's larger response at once.
    public init(port: Int, receiveBuffer: Int? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer.map(Int32.init) {
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard descriptor >= 0, connected == 0 else {
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
            throw CumulusError(.internalError, "cannot connect to port \(port)")
        }
    }

    /// Whether ``close()`` ran: a descriptor number is reused at once, so a late
    /// send after it would write into another test's socket.
    private let closed = Mutex(false)

    /// Sends `text`; does nothing once closed (and never raises SIGPIPE).
    public func send(_ text: String) {
        let bytes = Array(text.utf8)
        closed.withLock { closed in
            guard !closed else { return }
            _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// How long a read waits for a server that is expected to answer: long, because
    /// under `make test` this machine's two cores are shared by hundreds of tests and
    /// several server processes, and a wait that ends early fails a correct server. It
    /// costs nothing when the answer comes: every wait returns as soon as it does.
    public static let patience: Duration = .seconds(120)

    /// The response's first line, or `nil` if none arrives within ``patience``.
    public func statusLine() async -> String? { await Self.offPool { self.statusLineBlocking() } }

    private func statusLineBlocking() -> String? {
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + Self.patience
        while ContinuousClock.now < deadline {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard recv(descriptor, &byte, 1, 0) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    /// Whether the server has closed the connection, waiting up to `timeout` for it
    /// (anything it sent before closing is read and dropped).
    public func closedByServer(within timeout: Duration) async -> Bool {
        await Self.offPool { self.closedByServerBlocking(within: timeout) }
    }

    private func closedByServerBlocking(within timeout: Duration) -> Bool {
        receivedUntilClosed(within: timeout) != nil
    }

    /// What the server sends until it closes the connection, or `nil` if it has not
    /// closed within `timeout` (the socket is polled at least once). The one read
    /// loop of ``closedByServer(within:)`` and ``untilClosed()``.
    private func receivedUntilClosed(within timeout: Duration) -> [UInt8]? {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        repeat {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&waiting, 1, 50) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { return received }
                received += buffer.prefix(count)
            }
        } while ContinuousClock.now < deadline
        return nil
    }

    /// Sends as much of `bytes` as the socket takes now, without waiting; returns how
    /// much that was (a server that stops reading cannot make the test hang).
    @discardableResult
    public func sendWithoutWaiting(_ bytes: [UInt8]) -> Int {
        closed.withLock { closed in
            guard !closed else { return 0 }
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                guard count > 0 else { break }
                sent += count
            }
            return sent
        }
    }

    /// Sends all of `bytes` as the server reads them, for at most `timeout`; how many
    /// went. Off the cooperative pool, and the connection's lock is taken per piece,
    /// so ``close()`` never waits behind a server that stopped reading.
    public func sendAll(_ bytes: [UInt8], within timeout: Duration = .seconds(30)) async -> Int {
        await Self.offPool {
            var sent = 0
            let deadline = ContinuousClock.now + timeout
            while sent < bytes.count, ContinuousClock.now < deadline {
                var writable = pollfd(fd: self.descriptor, events: Int16(POLLOUT), revents: 0)
                guard poll(&writable, 1, 100) > 0 else { continue }
                let count = self.closed.withLock { closed -> Int in
                    guard !closed else { return -1 }
                    return bytes[sent...].withUnsafeBytes {
                        Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                    }
                }
                if count < 0 && (count == -1 && errno != EAGAIN) { break }
                if count > 0 { sent += count }
            }
            return sent
        }
    }

    /// Runs a blocking wait on a thread of its own: blocking Swift's cooperative
    /// pool (two threads here) would stall the server under test, which answers on it.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// Closes the socket (once).
    public func close() {
        closed.withLock { closed in
            guard !closed else { return }
            closed = true
            _ = Glibc.close(descriptor)
        }
    }

    /// A whole `GET` of `path` on this connection, asking the server to close after
    /// it: the response's bytes as text, or `nil` if it does not end within ``patience``.
    public func get(_ path: String, headers: [String: String] = [:]) async -> String? {
        let fields = headers.map { "\($0.key): \($0.value)\r\n" }.joined()
        send("GET \(path) HTTP/1.1\r\nHost: cumulus\r\nConnection: close\r\n\(fields)\r\n")
        return await untilClosed()
    }

    /// Everything the server sends until it closes the connection, as text, or `nil`
    /// if it does not close within ``patience``.
    public func untilClosed() async -> String? {
        await Self.offPool { self.untilClosedBlocking() }
    }

    private func untilClosedBlocking() -> String? {
        receivedUntilClosed(within: Self.patience).map { String(decoding: $0, as: UTF8.self) }
    }
}
