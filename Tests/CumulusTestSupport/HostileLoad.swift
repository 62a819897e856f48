/// Connections that load a server the ways issue 15's hostile clients do, held open
/// until ``close()``: what the combined-load process test and the bench's latency
/// figure both run. `base` is a container's `/database/1/{container}/{environment}`,
/// `credentials` the query string of an API token and a user's web token.
public final class HostileLoad: @unchecked Sendable {
    private let port: Int
    private let base: String
    private let credentials: String
    /// The connections opened so far (not the amplifying ones, which their callers own).
    public private(set) var held: [RawConnection] = []

    public init(port: Int, base: String, credentials: String) {
        self.port = port
        self.base = base
        self.credentials = credentials
    }

    /// `count` request heads sent in part and never finished (slowloris).
    public func trickleHeads(_ count: Int) throws {
        for index in 0..<count {
            let connection = try RawConnection(port: port)
            connection.send("GET \(base)/private/zones/list?\(credentials) HTTP/1.1\r\nHost: cumulus\r\nX-Pad-\(index): ")
            held.append(connection)
        }
    }

    /// `count` bodies announced at 4 MB, 1 MiB of each sent, then stalled.
    public func stallBodies(_ count: Int) throws {
        let megabyte = [UInt8](repeating: 0x20, count: 1 << 20)
        for _ in 0..<count {
            let connection = try RawConnection(port: port)
            connection.send(
                "POST \(base)/private/records/modify?\(credentials) HTTP/1.1\r\nHost: cumulus\r\nContent-Length: 4000000\r\n\r\n")
            _ = connection.sendWithoutWaiting(megabyte)
            held.append(connection)
        }
    }

    /// `count` notification streams of one user, opened and never read.
    public func holdStreams(_ count: Int) throws {
        for _ in 0..<count {
            let connection = try RawConnection(port: port)
            connection.send("GET \(base)/notifications/stream?\(credentials) HTTP/1.1\r\nHost: cumulus\r\n\r\n")
            held.append(connection)
        }
    }

    /// A 4 MB `records/modify` body whose one record holds a field of one-element
    /// arrays (`[[1],[1],…]`): its tape is bounded by its size, but the record's values,
    /// built whole, would take about 85 MB.
    public static let amplifyingBody = Array(
        (#"{"operations":[{"operationType":"create","record":{"recordType":"T","fields":{"f":{"value":["#
            + Array(repeating: "[1]", count: 1_000_000).joined(separator: ",") + "]}}}}]}").utf8)

    /// A new connection posting ``amplifyingBody`` to `records/modify` (`Connection:
    /// close`), its head sent; the caller sends the body (``RawConnection/sendAll(_:within:)``).
    public func amplifyingModify() throws -> RawConnection {
        let connection = try RawConnection(port: port)
        connection.send(
            "POST \(base)/private/records/modify?\(credentials) HTTP/1.1\r\nHost: cumulus\r\n"
                + "Content-Length: \(Self.amplifyingBody.count)\r\nConnection: close\r\n\r\n")
        return connection
    }

    /// Closes every held connection.
    public func close() { held.forEach { $0.close() } }
}
