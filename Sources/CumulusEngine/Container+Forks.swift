import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Telling what a superseded leader handed out for its lost tail from what this node
/// can serve (issue 16, "epoch starts"; ``LogStore/EpochStart``).
///
/// A change token, a notification token and an `X-Cumulus-Min-Sequence` each name the
/// epoch they were issued in and a position in the log. When that epoch ended in this
/// node's history (a later epoch began here) and the position lies past its end, the
/// leader that issued it wrote commits no follower had before it was replaced: the
/// position names a fork, and this history reaches it later with other commits.
/// Serving it as though it were ours would silently skip changes, so it gets
/// CloudKit's expired-token answer and the client fetches again from the start.
extension Container {
    /// Refuses, with `changeTokenExpired`, `what` issued in `epoch` whose last covered
    /// commit lies past that epoch's end in this node's history. `last` gives that commit's
    /// sequence as `txn` sees it: 0 when it covers none, `nil` when this node does not
    /// hold the position at all (past its head: from a fork too, once the epoch ended).
    func checkFork(
        issuedIn epoch: UInt64, _ what: String, last: (LMDBReadTransaction) throws -> UInt64?
    ) throws {
        // Issued in this node's epoch (or a newer one, which ``checkEpoch(ofToken:)``
        // refuses): nothing this node knows of ended it.
        guard epoch < store.epoch else { return }
        let store = self.store
        // Epoch starts are the log's; feeds, which `last` reads, the views'.
        guard let end = try store.logEnvironment.read({ try store.lastSequence(ofEpoch: epoch, in: $0) }) else { return }
        if let covered = try store.environment.read({ try last($0) }), covered <= end { return }
        throw CumulusError(
            .changeTokenExpired,
            "the \(what) was issued by the leader of epoch \(epoch), which was superseded before the commits it covers were replicated (that epoch ends at commit \(end) here); fetch again without a token")
    }

    /// The sequence of the commit that put entry `position` (counting one more for a
    /// partly consumed entry, `offset > 0`) in a feed, read by `entry`: what a change
    /// token at that place covers last.
    static func lastCovered(
        position: UInt64, offset: UInt32, entry: (UInt64) throws -> (feedPosition: UInt64, sequence: UInt64)?
    ) throws -> UInt64? {
        let covered = offset > 0 ? position + 1 : position
        guard covered > 0 else { return 0 }
        guard let found = try entry(covered), found.feedPosition == covered else { return nil }
        return found.sequence
    }

    /// Opens `user`'s notification token: where its stream stands, or
    /// `changeTokenExpired` if it cannot be used here (another log or user, a forgery,
    /// or a superseded leader's fork).
    func openNotificationToken(_ token: NotificationToken, user: String) throws -> UInt64 {
        let (epoch, after) = try token.open(secret: secret, logID: store.logID, user: user)
        try checkFork(issuedIn: epoch, "notification token") { [views] txn in
            guard after > 0 else { return 0 }
            guard let notification = try views.notifications(for: user, after: after - 1, limit: 1, txn).first,
                notification.sequence == after
            else { return nil }
            return notification.commitSequence
        }
        return after
    }

    /// Refuses an `X-Cumulus-Min-Sequence` of `sequence` from `epoch` (the
    /// `X-Cumulus-Epoch` of the answer that gave it) if that commit was made by a leader
    /// that was superseded before it was replicated: waiting for it here would end on
    /// another commit at the same place.
    public func checkRequestedSequence(_ sequence: UInt64, epoch: UInt64) throws {
        try checkFork(issuedIn: epoch, "sequence \(sequence)") { _ in sequence }
    }
}
