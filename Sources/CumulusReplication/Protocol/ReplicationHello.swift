import CumulusEngine
import CumulusLog
import CumulusModel
import Foundation

/// What a node says of itself (`GET /replication/hello`): which log it holds, in
/// which epoch, and how far. A follower reads it before seeding or streaming.
public struct ReplicationHello: Sendable, Codable, Hashable {
    /// The log ID, in hexadecimal.
    public var logID: String
    /// The leader epoch.
    public var epoch: UInt64
    /// The last sequence it holds.
    public var head: UInt64
    /// The chain hash of that commit, in hexadecimal.
    public var headHash: String
    /// `leader`, `follower` or `read-only`.
    public var role: String
    /// The first commit the node still holds, when retention dropped earlier ones
    /// (`nil`: it holds its whole log, or it is a node from before retention). A
    /// follower whose next commit is before it must be seeded from a snapshot.
    public var retainedFrom: UInt64?

    /// A hello.
    public init(logID: String, epoch: UInt64, head: UInt64, headHash: String, role: String, retainedFrom: UInt64? = nil) {
        self.logID = logID
        self.epoch = epoch
        self.head = head
        self.headHash = headHash
        self.role = role
        self.retainedFrom = retainedFrom
    }

    /// The identity as bytes, if the hex is well formed.
    public var identity: LogStore.Identity? {
        guard let bytes = Hex.decode(logID), bytes.count == 16, epoch >= 1 else { return nil }
        return LogStore.Identity(logID: bytes, epoch: epoch)
    }
}

extension ReplicationHello {
    /// What `node` says of itself.
    public static func of(_ node: NodeState) -> ReplicationHello {
        let store = node.container.store
        let head = store.head
        return ReplicationHello(
            logID: Hex.encode(store.logID), epoch: store.epoch, head: head.sequence, headHash: Hex.encode(head.hash),
            role: node.reportedRole,
            retainedFrom: store.firstRetained > 1 ? store.firstRetained : nil)
    }
}
