import CumulusEngine
import CumulusLog
import CumulusModel
import Foundation

/// The messages a leader sends one follower: its configuration first, then its
/// stored frames from the follower's position on, then — caught up — new frames as
/// they commit, with heartbeats when idle.
///
/// Pull-based: the HTTP server asks for the next message only when it has written
/// the last, so a slow follower holds the leader to one message of memory however
/// far behind it is. Ends when the consuming task is cancelled (the follower went
/// away) or this node is superseded.
public struct ReplicationStream: AsyncSequence, Sendable {
    let leader: ReplicationLeader
    let follower: String
    let next: UInt64

    /// An iterator from the follower's position.
    public func makeAsyncIterator() -> Iterator {
        Iterator(leader: leader, follower: follower, next: next)
    }

    /// Produces the encoded messages.
    public final class Iterator: AsyncIteratorProtocol {
        let leader: ReplicationLeader
        let follower: String
        var next: UInt64
        var configuration: ReplicatedConfiguration?
        var configurationCheckedAt = ContinuousClock.now
        var ended = false

        init(leader: ReplicationLeader, follower: String, next: UInt64) {
            self.leader = leader
            self.follower = follower
            self.next = next
        }

        deinit { leader.followers.streamClosed(follower) }

        /// The next message's bytes.
        public func next() async throws -> [UInt8]? {
            guard !ended, !Task.isCancelled else { return nil }
            let store = leader.container.store
            if let epoch = leader.container.supersededBy {
                ended = true
                return ReplicationMessage.failure(
                    "the leader was superseded by epoch \(epoch); follow the current leader").encoded()
            }
            // Credentials change rarely: look at most once per heartbeat.
            if configuration == nil || ContinuousClock.now - configurationCheckedAt >= leader.heartbeatInterval {
                configurationCheckedAt = .now
                let current = try ReplicatedConfiguration.read(from: store.logEnvironment)
                if current != configuration {
                    configuration = current
                    return ReplicationMessage.configuration(current).encoded()
                }
            }
            while true {
                let frames = try store.rawFrames(
                    from: next, limit: ReplicationLeader.framesPerMessage, maxBytes: ReplicationLeader.bytesPerMessage)
                if !frames.isEmpty {
                    next += UInt64(frames.count)
                    return ReplicationMessage.frames(frames, leaderHead: Swift.max(store.head.sequence, next - 1)).encoded()
                }
                let seen = next - 1
                let arrived = await store.waitForCommit(after: seen, until: .now + leader.heartbeatInterval)
                if Task.isCancelled { return nil }
                if !arrived {
                    return ReplicationMessage.heartbeat(leaderHead: store.head.sequence, now: .now()).encoded()
                }
            }
        }
    }
}
