import Foundation
import Synchronization

/// What a node has been since its process started: each change of its role, when, in
/// which epoch and why (the last ``capacity`` of them). It answers "when did this node
/// lead, and when and why did it stop?" (its lease lapsed, another node won, a newer
/// epoch superseded it, its log diverged and it rejoined), which `cumulus status` and
/// `/replication/status` report.
///
/// One history lives as long as the process serving: a node that rejoins its cluster
/// on a fresh copy of its data directory keeps it (`cumulus serve` hands the same one
/// to each ``Container`` it opens). A locked box: the container, the cluster member
/// and the server record into it from their own tasks.
public final class NodeHistory: Sendable {
    /// One change of role.
    public struct Change: Sendable, Codable, Hashable {
        /// When, in milliseconds since 1970.
        public var atMilliseconds: Int64
        /// The role taken: `leader`, `follower`, `candidate`, `read-only`, `superseded`
        /// (a leader fenced by a newer epoch) or `rejoining` (its data directory set
        /// aside to be seeded again).
        public var role: String
        /// The epoch the node's log was in.
        public var epoch: UInt64
        /// A follower's leader.
        public var leaderURL: String?
        /// Why, in a sentence.
        public var reason: String

        /// A change.
        public init(atMilliseconds: Int64, role: String, epoch: UInt64, leaderURL: String? = nil, reason: String) {
            self.atMilliseconds = atMilliseconds
            self.role = role
            self.epoch = epoch
            self.leaderURL = leaderURL
            self.reason = reason
        }

        /// `2026-11-29T01:02:03.456Z leader, epoch 3: won the election`.
        public var line: String {
            let date = Date(timeIntervalSince1970: Double(atMilliseconds) / 1000)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return "\(formatter.string(from: date)) \(role)\(leaderURL.map { " of \($0)" } ?? ""), epoch \(epoch): \(reason)"
        }
    }

    /// Changes kept; older ones are forgotten first.
    public static let capacity = 64

    private let kept = Mutex<[Change]>([])

    /// An empty history.
    public init() {}

    /// The changes, oldest first.
    public var changes: [Change] { kept.withLock { $0 } }

    /// Records that the node took `role` in `epoch` (following `leaderURL`) for `reason`,
    /// now. A change to the role, epoch and leader already recorded last is not
    /// recorded again (a role confirmed is not a change).
    public func record(_ role: String, epoch: UInt64, leaderURL: String? = nil, reason: String) {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        kept.withLock { changes in
            if let last = changes.last, last.role == role, last.epoch == epoch, last.leaderURL == leaderURL { return }
            changes.append(Change(atMilliseconds: now, role: role, epoch: epoch, leaderURL: leaderURL, reason: reason))
            if changes.count > Self.capacity { changes.removeFirst(changes.count - Self.capacity) }
        }
    }

    /// The last time the node began to lead, and the change that ended it (`nil` while
    /// it still leads); `nil` if it never led.
    public var lastLeadership: (began: Change, ended: Change?)? {
        let changes = self.changes
        guard let start = changes.lastIndex(where: { $0.role == "leader" }) else { return nil }
        return (changes[start], start + 1 < changes.count ? changes[start + 1] : nil)
    }
}
