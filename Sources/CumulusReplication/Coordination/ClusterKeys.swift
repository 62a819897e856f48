/// Where a Cumulus cluster keeps its state in etcd, every key in this one place:
///
/// | key | value | bound to |
/// |---|---|---|
/// | `/cumulus/<cluster>/leader` | the leader (``ClusterLeader`` as JSON) | the leader's lease |
/// | `/cumulus/<cluster>/epoch` | the last epoch any leader took (decimal) | nothing: it outlives every leader |
/// | `/cumulus/<cluster>/nodes/<node>` | what the node holds (``ClusterNode`` as JSON) | the node's lease |
///
/// The leader key exists exactly while some node leads: it is created only if absent,
/// in the transaction that also takes the next epoch, and vanishes with its lease.
public struct ClusterKeys: Sendable, Hashable {
    /// The cluster's name.
    public let cluster: String

    /// The keys of cluster `cluster`; `nil` unless the name is 1–64 letters, digits,
    /// `.`, `_` or `-` (it is part of every key, so nothing that could nest a path).
    public init?(cluster: String) {
        guard Self.isValidName(cluster) else { return nil }
        self.cluster = cluster
    }

    /// The prefix of every key of the cluster.
    public var root: String { "/cumulus/\(cluster)/" }
    /// The leader key.
    public var leader: String { root + "leader" }
    /// The epoch counter.
    public var epoch: String { root + "epoch" }
    /// The prefix of the nodes' records.
    public var nodes: String { root + "nodes/" }
    /// The record of node `name`.
    public func node(_ name: String) -> String { nodes + name }

    /// Whether `name` may name a cluster or a node.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }
}
