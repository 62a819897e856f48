import Crypto
import CumulusModel
import Foundation
import Synchronization

/// What this node has taken in uploads lately (issue 40): which upload URLs were used,
/// and how many bytes each user and each container uploaded within the last
/// ``UploadQuota/window``. An upload no record saves stays on disk until collection
/// after the grace, so the bytes uploaded within it bound what uploads alone can hold
/// of the disk.
///
/// In memory, per node: uploads go to the leader only, and after a restart or a
/// failover a URL could be used once more on the new leader, within its 15 minutes.
/// Memory is bounded by the uploads of one window.
public final class UploadLedger: Sendable {
    private struct Entry {
        let at: ContinuousClock.Instant
        let user: String
        let container: String
        let bytes: Int64
    }

    private struct State {
        /// Upload URLs used, with when each expires, in the order used (their
        /// lifetimes are equal, so that is the order they expire in).
        var used: Set<[UInt8]> = []
        var usedOrder: [(expires: Timestamp, id: [UInt8])] = []
        var usedStart = 0
        /// Uploads within the window, oldest first, and their sums.
        var recent: [Entry] = []
        var recentStart = 0
        var byUser: [String: Int64] = [:]
        var byContainer: [String: Int64] = [:]

        /// Takes `bytes` off `key`'s sum, dropping a sum that reaches zero.
        static func subtract(_ bytes: Int64, from key: String, in sums: inout [String: Int64]) {
            let left = (sums[key] ?? 0) - bytes
            sums[key] = left == 0 ? nil : left
        }

        mutating func forget(before now: Timestamp, olderThan cutoff: ContinuousClock.Instant) {
            while usedStart < usedOrder.count, usedOrder[usedStart].expires < now {
                used.remove(usedOrder[usedStart].id)
                usedStart += 1
            }
            while recentStart < recent.count, recent[recentStart].at < cutoff {
                let entry = recent[recentStart]
                Self.subtract(entry.bytes, from: UploadLedger.userKey(entry.container, entry.user), in: &byUser)
                Self.subtract(entry.bytes, from: entry.container, in: &byContainer)
                recentStart += 1
            }
            // Compact once the consumed prefix is most of the array.
            if usedStart > 1_024, usedStart * 2 > usedOrder.count {
                usedOrder.removeFirst(usedStart)
                usedStart = 0
            }
            if recentStart > 1_024, recentStart * 2 > recent.count {
                recent.removeFirst(recentStart)
                recentStart = 0
            }
        }
    }

    private let state = Mutex(State())
    private let clock = ContinuousClock()

    /// An empty ledger.
    public init() {}

    static func userKey(_ container: String, _ user: String) -> String { container + "\u{0}" + user }

    /// Claims upload URL `ticketText` (unless `oneUse` is false) for `ticket`'s user and
    /// checks their quota: `invalidArguments` for a URL used before, `quotaExceeded` when
    /// the user or the container uploaded `quota`'s bytes within its window already.
    func begin(_ ticketText: String, _ ticket: AssetUploadTicket, oneUse: Bool, quota: UploadQuota, now: Timestamp) throws {
        let id = Array(SHA256.hash(data: Array(ticketText.utf8)))
        let user = Self.userKey(ticket.database.container, ticket.user)
        let instant = clock.now
        try state.withLock { state in
            state.forget(before: now, olderThan: instant - quota.window)
            if oneUse, state.used.contains(id) {
                throw CumulusError(
                    .invalidArguments, "this upload URL was used already: one URL takes one file; ask for a new one")
            }
            let userBytes = state.byUser[user] ?? 0
            guard userBytes < quota.bytesPerUser else {
                throw CumulusError(
                    .quotaExceeded,
                    "you uploaded \(userBytes) bytes in the last \(quota.window.components.seconds) s, your most; "
                        + "wait for that window to pass")
            }
            let containerBytes = state.byContainer[ticket.database.container] ?? 0
            guard containerBytes < quota.bytesPerContainer else {
                throw CumulusError(
                    .quotaExceeded,
                    "container \(ticket.database.container) took \(containerBytes) bytes of uploads in the last "
                        + "\(quota.window.components.seconds) s, its most; try again later")
            }
            if oneUse, state.used.insert(id).inserted { state.usedOrder.append((ticket.expires, id)) }
        }
    }

    /// Gives back the claim of `ticketText`: its upload failed, and the URL may be tried again.
    func abandon(_ ticketText: String) {
        let id = Array(SHA256.hash(data: Array(ticketText.utf8)))
        _ = state.withLock { $0.used.remove(id) }
    }

    /// Counts `bytes` uploaded for `ticket`'s user.
    func finish(_ ticket: AssetUploadTicket, bytes: Int64) {
        let entry = Entry(at: clock.now, user: ticket.user, container: ticket.database.container, bytes: bytes)
        state.withLock { state in
            state.recent.append(entry)
            state.byUser[Self.userKey(entry.container, entry.user), default: 0] += bytes
            state.byContainer[entry.container, default: 0] += bytes
        }
    }
}
