import CumulusEngine
import CumulusLog
import CumulusModel

/// What a serving node is and what it does next, as a state machine in SwiftNIO's
/// manner: its drivers (``ClusterMember`` for the election's roles and the replication
/// streams it starts, ``NodeLoop`` for the node's whole life across rejoins) tell it
/// what happened, and perform what it answers.
///
/// It holds no socket, clock, container or task, so every transition is tested
/// without I/O (`NodeStateMachineTests`). Each event has its own action type, so an
/// answer the event cannot call for (a lease lost that says "follow") cannot be
/// written.
///
/// **Where the role is decided.** How the node was started (``Mode``) fixes which roles
/// it can take: a leader leads, a follower of a fixed URL follows it, a read-only node
/// serves what it has, and only a cluster member moves between leading, following and
/// waiting for an election, on the election's events. A failure of its replication or
/// of its start is judged here too: some leave the node serving (a leader etcd no longer
/// names), some make it rejoin on a fresh directory seeded from the leader (its log
/// diverged, it fell behind what the leader keeps, its views were torn), the rest stop
/// it.
public struct NodeStateMachine: Sendable {
    /// How the node was started (`cumulus serve`'s options).
    public enum Mode: Sendable, Hashable {
        /// Takes writes (no `--follow`, no `--etcd`).
        case leader
        /// Follows the leader at a fixed URL (`--follow`).
        case follower(leaderURL: String)
        /// Serves a directory as it is (`--read-only`).
        case readOnly
        /// A member of an etcd-coordinated cluster (`--etcd`): the election decides.
        case cluster
    }

    /// Where the node is.
    public enum State: Sendable, Hashable {
        /// Its directory is being opened; no role yet (a cluster member waits for the
        /// election's first answer before an empty directory is started or seeded).
        case opening
        /// Takes writes in `epoch`.
        case leading(epoch: UInt64)
        /// Follows the leader at `leaderURL`; `streaming` while the stream of its log
        /// runs (one that ended is started again when the leader is named again).
        case following(leaderURL: String, streaming: Bool)
        /// Takes no writes while its cluster elects a leader; a stream from the leader it
        /// followed last (`streaming`) may still be running.
        case candidate(streaming: String?)
        /// Serves what it holds; takes no writes.
        case readOnly
        /// Ends serving, to serve again on a fresh directory seeded from the leader.
        case rejoining(MustRejoin)
        /// Ends serving for good.
        case stopped(String)
    }

    /// Why replication stopped, or why the node could not start or go on: its drivers
    /// sort errors into these (``init(_:)``), and the machine decides what each means
    /// for this node.
    public enum Failure: Sendable, Hashable {
        /// The leader streamed from is not the cluster's leader any more (an older
        /// epoch, or unreachable).
        case leaderGone(String)
        /// This node's log went past the point where the leader's took another course.
        case diverged(String)
        /// The leader dropped the commits this node needs next (retention).
        case behindRetention(String)
        /// The views were torn by a crash of the machine, on a log that cannot make
        /// them again.
        case viewsTorn(String)
        /// Anything else: nothing the node can mend by itself.
        case fatal(String)

        /// The failure `error` is.
        public init(_ error: any Error) {
            switch error {
            case ReplicationError.staleEpoch(let why), ReplicationError.unreachable(let why): self = .leaderGone(why)
            case ReplicationError.diverged(let why): self = .diverged(why)
            case ReplicationError.behindRetention(let why): self = .behindRetention(why)
            case LogError.viewsTorn(let why): self = .viewsTorn(why)
            case let rejoin as MustRejoin:
                switch rejoin.cause {
                case .diverged: self = .diverged(rejoin.reason)
                case .behind: self = .behindRetention(rejoin.reason)
                case .torn: self = .viewsTorn(rejoin.reason)
                }
            default: self = .fatal("\(error)")
            }
        }
    }

    /// The answer to ``leaseGranted(_:)``.
    public enum LeadAction: Sendable, Hashable {
        /// Stop any stream from a former leader, then lead in `epoch`.
        case lead(epoch: UInt64, reason: String)
        /// It leads in that epoch already: nothing to do.
        case none
    }

    /// The answer to ``leaderSeen(_:stopReason:)``.
    public enum FollowAction: Sendable, Hashable {
        /// Refuse writes naming `leaderURL`, and stream from it: `restart` stops the
        /// stream from another leader (or a finished one) first and starts one from this
        /// leader; otherwise the running stream already comes from it.
        case follow(leaderURL: String, reason: String, restart: Bool)
        /// A node that is not a cluster member ignores the election.
        case none
    }

    /// The answer to ``leaseLost(stopReason:)``.
    public enum AwaitAction: Sendable, Hashable {
        /// Refuse writes while the cluster elects a leader (a stream keeps running).
        case awaitLeader(reason: String)
        /// A node that is not a cluster member ignores the election.
        case none
    }

    /// The answer to ``failed(_:streamingFrom:)``.
    public enum FailureAction: Sendable, Hashable {
        /// Go on serving: `note` says why the stream ended (the election moves the node on).
        case keepServing(note: String)
        /// Stop serving, move the directory aside, and serve again seeded from the leader.
        case rejoin(MustRejoin)
        /// Stop serving for good, with `why`.
        case stop(String)
    }

    /// How the node was started.
    public let mode: Mode
    /// Where it is now.
    public private(set) var state: State = .opening

    /// A node started in `mode`, opening its directory.
    public init(mode: Mode) {
        self.mode = mode
    }

    /// The directory is open: a node of a fixed role takes it; a cluster member is a
    /// candidate until the election's first answer.
    public mutating func opened(epoch: UInt64) {
        guard state == .opening else { return }
        switch mode {
        case .leader: state = .leading(epoch: epoch)
        case .follower(let url): state = .following(leaderURL: url, streaming: true)
        case .readOnly: state = .readOnly
        case .cluster: state = .candidate(streaming: nil)
        }
    }

    /// The election granted this node the lease: it leads as `leader` names it.
    public mutating func leaseGranted(_ leader: ClusterLeader) -> LeadAction {
        guard mode == .cluster, !isFinished else { return .none }
        if state == .leading(epoch: leader.epoch) { return .none }
        state = .leading(epoch: leader.epoch)
        return .lead(epoch: leader.epoch, reason: "won the election for epoch \(leader.epoch)")
    }

    /// The election names another node the leader. `stopReason`: why this node stopped
    /// leading, if it just did (the election says it once).
    public mutating func leaderSeen(_ leader: ClusterLeader, stopReason: String? = nil) -> FollowAction {
        guard mode == .cluster, !isFinished else { return .none }
        let stopped = stopReason.map { "stopped leading (\($0)); " } ?? ""
        let restart = streaming != leader.url
        state = .following(leaderURL: leader.url, streaming: true)
        return .follow(leaderURL: leader.url, reason: stopped + "\(leader.node) leads epoch \(leader.epoch)", restart: restart)
    }

    /// The election knows of no leader (this node's lease lapsed, or it never had one).
    public mutating func leaseLost(stopReason: String? = nil) -> AwaitAction {
        guard mode == .cluster, !isFinished else { return .none }
        state = .candidate(streaming: streaming)
        return .awaitLeader(reason: stopReason.map { "stopped leading: \($0)" } ?? "no leader known; an election is under way")
    }

    /// Something failed: the stream from `streamingFrom` ended for good (its driver
    /// gave up), or the node's start or run threw (`streamingFrom` nil).
    public mutating func failed(_ failure: Failure, streamingFrom: String? = nil) -> FailureAction {
        switch state {
        case .stopped(let why): return .stop(why)
        case .rejoining(let rejoin): return .rejoin(rejoin)
        default: break
        }
        // A stream this node no longer runs ends as it was told to: nothing to decide.
        if let url = streamingFrom, url != streaming {
            return .keepServing(note: "replication from \(url) ended after this node moved on")
        }
        let action = decide(failure)
        switch action {
        case .keepServing:
            // The stream ended: the role stays until the election names the next, and a
            // leader named again is streamed from anew.
            switch state {
            case .following(let url, _): state = .following(leaderURL: url, streaming: false)
            case .candidate: state = .candidate(streaming: nil)
            default: break
            }
        case .rejoin(let rejoin): state = .rejoining(rejoin)
        case .stop(let why): state = .stopped(why)
        }
        return action
    }

    /// What `failure` means for a node of this mode.
    private func decide(_ failure: Failure) -> FailureAction {
        switch (mode, failure) {
        case (.cluster, .leaderGone(let why)):
            // The election moves this node on to whoever leads now.
            .keepServing(note: why)
        case (.cluster, .diverged(let why)):
            // It led, and wrote what no follower had: only a fresh copy continues.
            .rejoin(MustRejoin(reason: why, cause: .diverged))
        case (.cluster, .behindRetention(let why)), (.follower, .behindRetention(let why)):
            // A verified prefix of the leader's log, but the rest is gone: a snapshot.
            .rejoin(MustRejoin(reason: why, cause: .behind))
        case (.follower, .viewsTorn(let why)):
            // The leader holds a whole copy; a follower's own log could not remake them.
            .rejoin(MustRejoin(reason: why, cause: .torn))
        case (_, .leaderGone(let why)), (_, .diverged(let why)), (_, .behindRetention(let why)),
            (_, .viewsTorn(let why)), (_, .fatal(let why)):
            // A fixed follower's leader is the only one it has, and diverged history
            // needs an operator; a leader's or read-only node's failure is its own.
            .stop(why)
        }
    }

    /// The leader a stream runs from, in the current state.
    private var streaming: String? {
        switch state {
        case .following(let url, let streaming): streaming ? url : nil
        case .candidate(let url): url
        case .opening, .leading, .readOnly, .rejoining, .stopped: nil
        }
    }

    /// Whether serving has ended (to rejoin or for good): later events change nothing.
    public var isFinished: Bool {
        switch state {
        case .rejoining, .stopped: true
        default: false
        }
    }
}
