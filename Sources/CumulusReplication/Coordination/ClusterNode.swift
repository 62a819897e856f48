import Foundation

/// What a cluster member holds, as it publishes it under its lease in etcd: a
/// candidate defers to any live node whose log is further on, so a node that lacks
/// commits others hold does not win and make them give those up.
///
/// "Further on" compares the epoch first, then the head, as Raft compares the last
/// entry's term before its index: a deposed leader's diverged tail can be longer than
/// the new leader's history, but it is in an older epoch.
public struct ClusterNode: Sendable, Hashable, Codable {
    /// The node's name.
    public var node: String
    /// Its advertised URL.
    public var url: String
    /// The epoch of its log.
    public var epoch: UInt64
    /// Its durable head.
    public var head: UInt64

    /// A node's record.
    public init(node: String, url: String, epoch: UInt64, head: UInt64) {
        self.node = node
        self.url = url
        self.epoch = epoch
        self.head = head
    }

    /// Whether this node's log is further on than one in `epoch` with head `head`.
    public func isAhead(ofEpoch epoch: UInt64, head: UInt64) -> Bool {
        (self.epoch, self.head) > (epoch, head)
    }

    /// The value stored under the node's key.
    public var encoded: [UInt8] { (try? JSONEncoder().encode(self)).map { [UInt8]($0) } ?? [] }

    /// The node a record names, or `nil` for bytes no Cumulus node wrote (ignored: a
    /// stranger's key must not stop an election).
    public static func decode(_ bytes: [UInt8]) -> ClusterNode? {
        try? JSONDecoder().decode(ClusterNode.self, from: Data(bytes))
    }
}
