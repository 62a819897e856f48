import CumulusLog
import CumulusModel

/// The leader's side of one follower's session, as a state machine in SwiftNIO's
/// manner: its drivers (``ReplicationLeader/openStream(follower:identity:after:hash:)``
/// and ``ReplicationStream``) tell it what they read — the follower's position beside
/// what this log holds, a chain hash, whether a commit arrived — and do what it
/// answers: refuse, register the follower, send configuration, frames or a heartbeat,
/// wait, or end.
///
/// It holds no log, socket or clock, so every decision is tested without them
/// (`FollowerSessionStateMachineTests`): whom a leader streams to and from where, and
/// what it sends next. The mirror image of ``FollowerStateMachine``.
public struct FollowerSessionStateMachine: Sendable {
    /// What the leader holds, read by the driver for one decision.
    public struct Leader: Sendable, Hashable {
        /// Its log's ID.
        public var logID: [UInt8]
        /// Its epoch.
        public var epoch: UInt64
        /// Whether it leads: its role is leader and no newer epoch superseded it.
        public var leads: Bool
        /// Its role, for a refusal's reason.
        public var role: String
        /// Its durable head.
        public var head: UInt64
        /// The first commit its log still holds (retention).
        public var firstRetained: UInt64

        /// A view of a leader.
        public init(logID: [UInt8], epoch: UInt64, leads: Bool, role: String, head: UInt64, firstRetained: UInt64) {
            self.logID = logID
            self.epoch = epoch
            self.leads = leads
            self.role = role
            self.head = head
            self.firstRetained = firstRetained
        }
    }

    /// Where the session is.
    public enum State: Sendable, Hashable {
        /// No request yet.
        case idle
        /// The follower's position passed the cheap checks; its chain hash there is
        /// being compared with this log's.
        case checking(after: UInt64, hash: [UInt8])
        /// The follower is being registered at `after` (semi-synchronous commit and
        /// retention count it from then on).
        case registering(after: UInt64)
        /// Streaming: `next` is the first commit not yet sent.
        case streaming(next: UInt64)
        /// Waiting for a commit after `next - 1`.
        case waiting(next: UInt64)
        /// Ended: refused, superseded, or the follower went away.
        case ended
    }

    /// The answer to ``openRequested(identity:after:hash:leader:)``.
    public enum OpenAction: Sendable, Equatable {
        /// Read this log's chain hash at `after` and report it (``chainHashRead(_:)``).
        case readChainHash(at: UInt64)
        /// Refuse the follower.
        case refuse(ReplicationError)
        /// The follower is in `epoch`, newer than this node's: this node was
        /// superseded. Fence it, then refuse with `error`.
        case superseded(epoch: UInt64, error: ReplicationError)
    }

    /// This log's chain hash at a follower's position, as read.
    public enum ChainHash: Sendable, Hashable {
        /// The hash, or `nil` if this log has no such commit.
        case found([UInt8]?)
        /// Retention dropped the commit; the log holds `first` on.
        case truncated(first: UInt64)
    }

    /// The answer to ``chainHashRead(_:)``.
    public enum CheckAction: Sendable, Equatable {
        /// Register the follower at `after`, then report (``registered(firstRetained:)``).
        case register(at: UInt64)
        /// Refuse the follower.
        case refuse(ReplicationError)
    }

    /// The answer to ``registered(firstRetained:)``.
    public enum RegisteredAction: Sendable, Equatable {
        /// Stream from `next`.
        case stream(next: UInt64)
        /// Retention dropped what it needs meanwhile: unregister it and refuse.
        case unregister(ReplicationError)
    }

    /// What the stream does next, from each event of the stream's loop.
    public enum StreamAction: Sendable, Hashable {
        /// Send a failure message saying `reason`, and end.
        case sendFailure(String)
        /// Read the replicated configuration, and report whether it changed
        /// (``configurationRead(changed:)``).
        case readConfiguration
        /// Send the configuration just read.
        case sendConfiguration
        /// Read frames from `next` on and report how many (``framesRead(_:head:)``).
        case readFrames(from: UInt64)
        /// Send the frames read, saying the leader's head is `leaderHead`.
        case sendFrames(leaderHead: UInt64)
        /// Wait for a commit after `after`, up to a heartbeat interval (``waitEnded(arrived:cancelled:)``).
        case waitForCommit(after: UInt64)
        /// Send a heartbeat: nothing arrived.
        case sendHeartbeat
        /// End the stream; nothing more is sent.
        case finish
    }

    /// Where the session is.
    public private(set) var state: State = .idle

    /// A session before its request.
    public init() {}

    /// A follower holding `identity`'s log up to `after`, whose chain hash there is
    /// `hash`, asks for a stream from a node that holds what `leader` says.
    public mutating func openRequested(
        identity: LogStore.Identity, after: UInt64, hash: [UInt8], leader: Leader
    ) -> OpenAction {
        guard state == .idle else { return refuse(.protocolViolation("a session opens once")) }
        guard identity.logID == leader.logID else {
            return refuse(.diverged(
                "the follower holds log \(Hex.encode(identity.logID)), this leader log \(Hex.encode(leader.logID)); re-seed it"))
        }
        if identity.epoch > leader.epoch {
            state = .ended
            return .superseded(
                epoch: identity.epoch,
                error: .staleEpoch(
                    "this node is in epoch \(leader.epoch), the follower in \(identity.epoch): this node was superseded; follow the current leader"
                ))
        }
        guard leader.leads else {
            return refuse(.refused("this node is not a leader (\(leader.role)); follow the leader"))
        }
        guard after <= leader.head else {
            return refuse(.diverged(
                "the follower holds commits up to \(after), this leader only up to \(leader.head): it followed a superseded leader; re-seed it"))
        }
        guard after + 1 >= leader.firstRetained else { return refuse(Self.behind(after, leader.firstRetained)) }
        state = .checking(after: after, hash: hash)
        return .readChainHash(at: after)
    }

    /// This log's chain hash at the follower's position, as the driver read it.
    public mutating func chainHashRead(_ read: ChainHash) -> CheckAction {
        guard case .checking(let after, let hash) = state else {
            state = .ended
            return .refuse(.protocolViolation("a chain hash read outside a session's check"))
        }
        switch read {
        case .truncated(let first):
            state = .ended
            return .refuse(Self.behind(after, first))
        case .found(let mine) where mine == hash:
            state = .registering(after: after)
            return .register(at: after)
        case .found:
            state = .ended
            return .refuse(.diverged(
                "the follower's commit \(after) is not this leader's commit \(after): it followed a superseded leader; re-seed it"))
        }
    }

    /// The follower is registered; `firstRetained` is what the log holds now. Retention
    /// keeps what a registered stream needs, but may have dropped it between the check
    /// and the registration: looked at again.
    public mutating func registered(firstRetained: UInt64) -> RegisteredAction {
        guard case .registering(let after) = state else {
            state = .ended
            return .unregister(.protocolViolation("a registration outside a session's opening"))
        }
        guard after + 1 >= firstRetained else {
            state = .ended
            return .unregister(Self.behind(after, firstRetained))
        }
        state = .streaming(next: after + 1)
        return .stream(next: after + 1)
    }

    /// The follower's side wants the next message. `supersededBy`: the newer epoch
    /// this node learned of, if any; `configurationDue`: whether it is time to look at
    /// the replicated configuration again (first, then once per heartbeat).
    public mutating func nextWanted(supersededBy: UInt64?, configurationDue: Bool, cancelled: Bool) -> StreamAction {
        guard case .streaming(let next) = state, !cancelled else { return finish() }
        if let epoch = supersededBy {
            state = .ended
            return .sendFailure("the leader was superseded by epoch \(epoch); follow the current leader")
        }
        return configurationDue ? .readConfiguration : .readFrames(from: next)
    }

    /// The configuration was read: `changed` if it differs from the last one sent.
    public mutating func configurationRead(changed: Bool) -> StreamAction {
        guard case .streaming(let next) = state else { return finish() }
        return changed ? .sendConfiguration : .readFrames(from: next)
    }

    /// `count` frames were read from the next commit on; `head` is the log's head.
    public mutating func framesRead(_ count: Int, head: UInt64) -> StreamAction {
        guard case .streaming(let next) = state else { return finish() }
        guard count > 0 else {
            state = .waiting(next: next)
            return .waitForCommit(after: next - 1)
        }
        let after = next + UInt64(count)
        state = .streaming(next: after)
        // The head may lag the frames read in the same moment; never say less than sent.
        return .sendFrames(leaderHead: max(head, after - 1))
    }

    /// The wait ended: `arrived` if a commit came, `cancelled` if the follower went away.
    public mutating func waitEnded(arrived: Bool, cancelled: Bool) -> StreamAction {
        guard case .waiting(let next) = state, !cancelled else { return finish() }
        state = .streaming(next: next)
        return arrived ? .readFrames(from: next) : .sendHeartbeat
    }

    /// Why a follower that needs commit `after + 1` cannot stream from a log that
    /// holds `first` on.
    static func behind(_ after: UInt64, _ first: UInt64) -> ReplicationError {
        .behindRetention(
            "the follower needs commit \(after + 1), but this leader keeps its log from commit \(first) on (--retain-commits): seed it from a snapshot")
    }

    private mutating func refuse(_ error: ReplicationError) -> OpenAction {
        state = .ended
        return .refuse(error)
    }

    private mutating func finish() -> StreamAction {
        state = .ended
        return .finish
    }
}
