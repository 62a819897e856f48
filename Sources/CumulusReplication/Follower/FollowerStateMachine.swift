import CumulusLog
import CumulusModel

/// A follower's conversation with its leader, as a state machine in SwiftNIO's manner:
/// the driver (``ReplicaFollower``) tells it what happened — the leader's hello, a
/// message on the stream, a session's end, a wait's end — and does what it answers.
///
/// It holds no socket, no clock, no randomness and no container, so each decision is
/// tested without a network (`FollowerStateMachineTests`): which leader may be
/// followed and from where, what each message calls for, when to reconnect and after
/// how long, and when only a new snapshot or an operator can help. What it cannot judge
/// itself (a server secret, a frame's chain) the driver checks and reports as the
/// session's end.
public struct FollowerStateMachine: Sendable {
    /// Where the conversation is.
    public enum State: Sendable, Equatable {
        /// Not started.
        case idle
        /// Asking the leader who it is.
        case connecting
        /// The hello was accepted: the stream is being opened after `after`.
        case opening(after: UInt64, epoch: UInt64)
        /// Receiving the leader's messages.
        case streaming
        /// The session ended in a way reconnecting can mend; waiting before the next.
        case waiting(ReplicationError)
        /// Only a new snapshot can help (the leader no longer holds what comes next):
        /// the driver re-seeds this node.
        case reseeding(ReplicationError)
        /// Replication must stop: going on could fork history, or an operator must act.
        case stopped(String)
    }

    /// What happened.
    public enum Event: Sendable {
        /// The driver starts following.
        case start
        /// The leader's hello, beside what this node holds: its identity and its head.
        case helloReceived(ReplicationHello, local: LogStore.Identity, head: LogHead)
        /// The leader accepted this node's position; the stream is open.
        case streamOpened
        /// One message of the stream.
        case messageReceived(ReplicationMessage)
        /// The session ended: the stream closed, a request failed, or the driver
        /// refused something (a frame, a secret).
        case sessionEnded(ReplicationError)
        /// Something outside replication failed (storage): nothing to retry.
        case faulted(String)
        /// The wait asked for by ``Action/wait(_:)`` is over.
        case waitEnded
    }

    /// What the driver is to do.
    public enum Action: Sendable, Equatable {
        /// Ask the leader's hello.
        case sayHello
        /// Open the stream after `after`, whose chain hash is `hash`.
        case openStream(after: UInt64, hash: [UInt8])
        /// Raise this node's stored epoch to the leader's (it accepted our position).
        case adoptEpoch(UInt64)
        /// Append and apply the leader's frames; `leaderHead` is its head as it sent them.
        case apply([[UInt8]], leaderHead: UInt64)
        /// The leader is alive, at `leaderHead`.
        case noteContact(leaderHead: UInt64)
        /// Check the leader's server secret is this node's, then store its credentials.
        case storeConfiguration(ReplicatedConfiguration)
        /// End the session with this error (the driver reports it back as ``Event/sessionEnded(_:)``).
        case endSession(ReplicationError)
        /// Wait this long (plus the driver's jitter), then report ``Event/waitEnded``.
        case wait(Duration)
        /// Re-seed this node from a snapshot of the leader's environment.
        case reseed(ReplicationError)
        /// Stop following, for this reason.
        case stop(ReplicationError)
        /// Nothing.
        case none
    }

    /// Where the conversation is now.
    public private(set) var state: State = .idle
    /// The leader's URL, for the reasons given.
    public let leaderURL: String
    /// The wait before the next reconnection, if this session hears nothing.
    private var delay = Self.backoff.first
    /// Whether the current session has heard from the leader: one that did resets the
    /// backoff, so a stream that breaks now and then reconnects at once.
    private var heard = false

    /// Shortest and longest wait between reconnection attempts.
    public static let backoff: (first: Duration, longest: Duration) = (.milliseconds(100), .seconds(5))

    /// A conversation with the leader at `leaderURL`, not started.
    public init(leaderURL: String) {
        self.leaderURL = leaderURL
    }

    /// Takes in `event`; returns what the driver does next.
    public mutating func receive(_ event: Event) -> Action {
        switch event {
        case .start, .waitEnded:
            if case .stopped = state { return .none }
            state = .connecting
            heard = false
            return .sayHello
        case .helloReceived(let hello, let local, let head):
            guard case .connecting = state else { return .none }
            if let refusal = Self.refusal(of: hello, local: local, leaderURL: leaderURL) { return .endSession(refusal) }
            state = .opening(after: head.sequence, epoch: hello.epoch)
            return .openStream(after: head.sequence, hash: head.hash)
        case .streamOpened:
            guard case .opening(_, let epoch) = state else { return .none }
            state = .streaming
            // Only now is the leader's (newer) epoch this node's too: it accepted our position.
            return .adoptEpoch(epoch)
        case .messageReceived(let message):
            heard = true
            switch message {
            case .frames(let frames, let leaderHead): return .apply(frames, leaderHead: leaderHead)
            case .heartbeat(let leaderHead, _): return .noteContact(leaderHead: leaderHead)
            case .configuration(let configuration): return .storeConfiguration(configuration)
            // The one reason a leader ends a stream today is being superseded.
            case .failure(let reason): return .endSession(.staleEpoch("the leader stopped the stream: \(reason)"))
            }
        case .sessionEnded(let error):
            switch state {
            case .stopped, .reseeding, .waiting: return .none
            case .idle, .connecting, .opening, .streaming: break
            }
            if error.isTransient {
                let wait = heard ? Self.backoff.first : delay
                delay = min(wait * 2, Self.backoff.longest)
                state = .waiting(error)
                return .wait(wait)
            }
            if case .behindRetention = error {
                state = .reseeding(error)
                return .reseed(error)
            }
            state = .stopped(error.description)
            return .stop(error)
        case .faulted(let problem):
            state = .stopped(problem)
            return .none
        }
    }

    /// Why this node must not follow the node that said `hello`, if it must not: another
    /// log, an older epoch (that node was superseded), or not a leader.
    static func refusal(of hello: ReplicationHello, local: LogStore.Identity, leaderURL: String) -> ReplicationError? {
        guard let identity = hello.identity else {
            return .protocolViolation("the leader's hello has a malformed log ID or epoch")
        }
        guard identity.logID == local.logID else {
            return .diverged(
                "this node holds log \(Hex.encode(local.logID)) but the leader log \(hello.logID); start it with --reseed to discard this copy")
        }
        guard identity.epoch >= local.epoch else {
            return .staleEpoch(
                "the leader at \(leaderURL) is in epoch \(identity.epoch), older than this node's \(local.epoch): it was superseded; follow the current leader")
        }
        guard hello.role == "leader" else {
            return .unreachable("\(leaderURL) is not a leader (\(hello.role))")
        }
        return nil
    }

    /// The phase `cumulus status` shows: connecting, streaming, retrying, re-seeding, stopped.
    public var phase: String {
        switch state {
        case .idle, .connecting, .opening: "connecting"
        case .streaming: "streaming"
        case .waiting: "retrying"
        case .reseeding: "re-seeding"
        case .stopped: "stopped"
        }
    }

    /// What went wrong last, while retrying, re-seeding or stopped.
    public var problem: String? {
        switch state {
        case .waiting(let error), .reseeding(let error): error.description
        case .stopped(let problem): problem
        case .idle, .connecting, .opening, .streaming: nil
        }
    }
}
