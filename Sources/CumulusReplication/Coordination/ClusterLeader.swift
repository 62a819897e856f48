import Foundation

/// The node that leads a cluster, as its leader key in etcd names it: which node, where
/// to reach it, and the epoch it took when it won.
public struct ClusterLeader: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The node's name (`--node`).
    public var node: String
    /// Its advertised URL (`--advertise`), where followers stream from and clients
    /// are sent for writes.
    public var url: String
    /// The epoch it leads in.
    public var epoch: UInt64

    /// A leader.
    public init(node: String, url: String, epoch: UInt64) {
        self.node = node
        self.url = url
        self.epoch = epoch
    }

    /// The value stored under the leader key.
    public var encoded: [UInt8] {
        // Three plain fields: encoding them cannot fail.
        (try? JSONEncoder().encode(self)).map { [UInt8]($0) } ?? []
    }

    /// The leader a leader key's value names; throws
    /// ``CoordinationError/protocolViolation(_:)`` for a value no Cumulus node wrote.
    public static func decode(_ bytes: [UInt8]) throws -> ClusterLeader {
        do {
            return try JSONDecoder().decode(ClusterLeader.self, from: Data(bytes))
        } catch {
            throw CoordinationError.protocolViolation("the leader key holds \(bytes.count) bytes that do not name a leader")
        }
    }

    /// `node (url), epoch N`.
    public var description: String { "\(node) (\(url)), epoch \(epoch)" }
}
