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
    /// The session, opened: it streams from the follower's position.
    let session: FollowerSessionStateMachine

    /// An iterator from the follower's position.
    public func makeAsyncIterator() -> Iterator {
        Iterator(leader: leader, follower: follower, session: session)
    }

    /// Produces the encoded messages: the driver of the session's stream, doing what
    /// its machine answers.
    public final class Iterator: AsyncIteratorProtocol {
        let leader: ReplicationLeader
        let follower: String
        var session: FollowerSessionStateMachine
        var configuration: ReplicatedConfiguration?
        var configurationCheckedAt = ContinuousClock.now

        init(leader: ReplicationLeader, follower: String, session: FollowerSessionStateMachine) {
            self.leader = leader
            self.follower = follower
            self.session = session
        }

        deinit { leader.followers.streamClosed(follower) }

        /// The next message's bytes.
        public func next() async throws -> [UInt8]? {
            let store = leader.container.store
            // Credentials change rarely: looked at first, then at most once per heartbeat.
            let due = configuration == nil || ContinuousClock.now - configurationCheckedAt >= leader.heartbeatInterval
            var action = session.nextWanted(
                supersededBy: leader.container.supersededBy, configurationDue: due, cancelled: Task.isCancelled)
            var frames: [[UInt8]] = []
            while true {
                switch action {
                case .finish:
                    return nil
                case .sendFailure(let reason):
                    return ReplicationMessage.failure(reason).encoded()
                case .readConfiguration:
                    configurationCheckedAt = .now
                    let current = try ReplicatedConfiguration.read(from: store.logEnvironment)
                    let changed = current != configuration
                    configuration = current
                    action = session.configurationRead(changed: changed)
                case .sendConfiguration:
                    guard let configuration else { return nil }
                    return ReplicationMessage.configuration(configuration).encoded()
                case .readFrames(let next):
                    frames = try store.rawFrames(
                        from: next, limit: ReplicationLeader.framesPerMessage, maxBytes: ReplicationLeader.bytesPerMessage)
                    action = session.framesRead(frames.count, head: store.head.sequence)
                case .sendFrames(let leaderHead):
                    return ReplicationMessage.frames(frames, leaderHead: leaderHead).encoded()
                case .waitForCommit(let seen):
                    let arrived = await store.waitForCommit(after: seen, until: .now + leader.heartbeatInterval)
                    action = session.waitEnded(arrived: arrived, cancelled: Task.isCancelled)
                case .sendHeartbeat:
                    return ReplicationMessage.heartbeat(leaderHead: store.head.sequence, now: .now()).encoded()
                }
            }
        }
    }
}
