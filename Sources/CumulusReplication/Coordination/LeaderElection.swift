/// One node's part in electing a cluster's leader through etcd, as a state machine:
/// events in (what etcd answered, what a watch saw, the time), actions out (what to
/// ask etcd, what the server must do). It does no I/O and reads no clock, so every
/// interleaving can be tested without etcd or sockets; ``ClusterElection`` drives it.
///
/// **The protocol.**
/// - Every node holds one lease (its session), renewed every third of its TTL.
/// - A node that knows of no leader campaigns: one transaction creates the leader key,
///   bound to its lease, only if the key does not exist, and takes the next epoch only
///   if nobody took one since it read the counter. The transaction's other branch reads
///   the key, so a lost campaign names the winner.
/// - Every node watches the leader key and follows whom it names; when the key goes
///   (its holder's lease ended), the others campaign.
///
/// **Fencing.** A leader acknowledges writes only until its lease's end *as its own
/// clock computes it*, less a safety margin: the time it *sent* the last renewal that
/// etcd granted, plus the TTL granted, minus ``Configuration/safetyMargin``. etcd
/// starts the TTL when the request arrives, which is later, so etcd's lease outlives
/// that point by at least the margin and the clocks' drift over one TTL. The leader key
/// goes only with the lease, and no other node can win before it goes; so by the time
/// another node leads, this one has stopped acknowledging (``mayAcknowledge(at:)``).
public struct LeaderElection: Sendable {
    /// An instant of the node's monotonic clock.
    public typealias Instant = ContinuousClock.Instant

    /// Who this node is and its timing.
    public struct Configuration: Sendable, Hashable {
        /// The node's name.
        public var node: String
        /// The URL it advertises to followers and clients.
        public var url: String
        /// The lease's time to live (etcd counts whole seconds).
        public var ttl: Duration
        /// How long before its lease's end, by its own clock, a leader stops acknowledging.
        public var safetyMargin: Duration
        /// How long to wait before asking etcd again after a failed request.
        public var retryInterval: Duration

        /// A configuration: `ttl` 5 s by default, a margin of a fifth of it, retries
        /// every quarter second.
        public init(node: String, url: String, ttl: Duration = .seconds(5), safetyMargin: Duration? = nil,
                    retryInterval: Duration = .milliseconds(250)) {
            self.node = node
            self.url = url
            self.ttl = ttl
            self.safetyMargin = safetyMargin ?? ttl / 5
            self.retryInterval = retryInterval
        }
    }

    /// What this node is to the cluster.
    public enum Role: Sendable, Hashable {
        /// It knows of no leader, or is trying to become one.
        case candidate
        /// It follows `leader`.
        case follower(ClusterLeader)
        /// It leads, as `leader` (itself) names it.
        case leader(ClusterLeader)
    }

    /// Something that happened.
    public enum Event: Sendable, Hashable {
        /// The node starts.
        case started(at: Instant)
        /// etcd granted lease `id` for `ttl`; the grant was sent at `requestedAt`.
        case leaseGranted(id: Int64, ttl: Duration, requestedAt: Instant)
        /// The grant failed (etcd unreachable or refused).
        case leaseGrantFailed(at: Instant)
        /// A renewal sent at `requestedAt` was granted `ttl`.
        case leaseRenewed(id: Int64, ttl: Duration, requestedAt: Instant)
        /// etcd no longer has lease `id` (it expired or was revoked).
        case leaseLost(id: Int64, at: Instant)
        /// A renewal failed (etcd unreachable or refused).
        case leaseRenewFailed(id: Int64, at: Instant)
        /// The campaign's transaction created the leader key, at etcd revision
        /// `revision`: this node leads as `leader`.
        case campaignWon(ClusterLeader, revision: Int64, at: Instant)
        /// The leader key exists, names `leader` and is bound to lease `heldBy` (`nil`
        /// and 0: the epoch moved meanwhile, and the key was gone when read), as of etcd
        /// revision `revision`.
        case campaignLost(ClusterLeader?, heldBy: Int64, revision: Int64, at: Instant)
        /// The campaign's transaction failed (etcd unreachable or refused).
        case campaignFailed(at: Instant)
        /// The campaign was not run: node `node` holds a log further on, and should win.
        case campaignDeferred(to: String, at: Instant)
        /// The leader key was read or watched: it names `leader` and is bound to lease
        /// `heldBy`, or does not exist (`nil`, 0), as of etcd revision `revision` (a
        /// watch reports changes late: one older than what the node knows is ignored).
        case leaderObserved(ClusterLeader?, heldBy: Int64, revision: Int64, at: Instant)
        /// Time passed.
        case tick(Instant)
    }

    /// Something to do.
    public enum Action: Sendable, Hashable {
        /// Ask etcd for a lease of `ttl`; answer with `leaseGranted` or `leaseGrantFailed`.
        case grantLease(ttl: Duration)
        /// Renew lease `id`; answer with `leaseRenewed`, `leaseLost` or `leaseRenewFailed`.
        case renewLease(id: Int64)
        /// Run the campaign's transaction with lease `lease`, for an epoch of at least
        /// `minimumEpoch`, unless a live node holds a log further on; answer with
        /// `campaignWon`, `campaignLost`, `campaignDeferred` or `campaignFailed`.
        case campaign(lease: Int64, minimumEpoch: UInt64)
        /// Revoke lease `id` (best effort: it ends by itself anyway).
        case revokeLease(id: Int64)
        /// Start acknowledging writes as `leader`.
        case becomeLeader(ClusterLeader)
        /// Stop acknowledging writes at once.
        case stopLeading(reason: String)
        /// Follow `leader`.
        case follow(ClusterLeader)
        /// Deliver a `tick` at `at` (or soon after).
        case wake(at: Instant)
    }

    /// The configuration.
    public let configuration: Configuration
    /// What this node is now.
    public private(set) var role: Role = .candidate
    /// The highest epoch this node knows of: its own log's, or one it saw in etcd.
    public private(set) var knownEpoch: UInt64

    /// The etcd revision of the newest leader-key state this node has acted on.
    private var leaderRevision: Int64 = 0
    /// The lease this node holds, as far as it knows.
    public private(set) var lease: Int64?
    /// The lease's end by this node's clock: the last granted request's send time + TTL.
    private var leaseEnd: Instant?
    private var nextRenewal: Instant?
    private var nextCampaign: Instant?
    private var grantPending = false
    private var renewalPending = false
    private var campaignPending = false
    private var started = false

    /// A node that has not started, whose log is in epoch `knownEpoch`.
    public init(_ configuration: Configuration, knownEpoch: UInt64) {
        self.configuration = configuration
        self.knownEpoch = knownEpoch
    }

    /// Whether a write may be acknowledged at `now`: this node leads, and its lease has
    /// at least the safety margin left by its own clock.
    public func mayAcknowledge(at now: Instant) -> Bool {
        guard case .leader = role, let end = acknowledgeUntil else { return false }
        return now < end
    }

    /// While leading, the instant from which no write may be acknowledged.
    public var acknowledgeUntil: Instant? {
        guard case .leader = role, let leaseEnd else { return nil }
        return leaseEnd - configuration.safetyMargin
    }

    /// Handles `event`; returns what to do, in order.
    public mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .started(let now):
            guard !started else { return [] }
            started = true
            requestLease(&actions)
            scheduleWake(now, &actions)

        case .leaseGranted(let id, let ttl, let requestedAt):
            grantPending = false
            lease = id
            leaseEnd = requestedAt + ttl
            nextRenewal = requestedAt + ttl / 3
            // Campaigning is also how a starting node learns who leads: a lost
            // campaign names the winner.
            if case .leader = role {} else { campaign(requestedAt, &actions) }
            scheduleWake(requestedAt, &actions)

        case .leaseGrantFailed(let now):
            grantPending = false
            nextCampaign = nil
            // Retried from `tick` once the interval has passed.
            nextRenewal = now + configuration.retryInterval
            scheduleWake(now, &actions)

        case .leaseRenewed(let id, let ttl, let requestedAt):
            guard id == lease else { return [] }
            renewalPending = false
            leaseEnd = max(leaseEnd ?? requestedAt, requestedAt + ttl)
            nextRenewal = requestedAt + ttl / 3
            scheduleWake(requestedAt, &actions)

        case .leaseLost(let id, let now):
            guard id == lease else { return [] }
            renewalPending = false
            lease = nil
            leaseEnd = nil
            stepDown("etcd no longer holds this node's lease", now, &actions)
            requestLease(&actions)
            scheduleWake(now, &actions)

        case .leaseRenewFailed(let id, let now):
            guard id == lease else { return [] }
            renewalPending = false
            nextRenewal = now + configuration.retryInterval
            check(now, &actions)

        case .campaignWon(let leader, let revision, let now):
            campaignPending = false
            knownEpoch = max(knownEpoch, leader.epoch)
            leaderRevision = max(leaderRevision, revision)
            guard let end = leaseEnd, now < end - configuration.safetyMargin else {
                // Won with a lease too close to its end to acknowledge anything: give
                // the key up with the lease and campaign again under a new one.
                abandonLease(&actions)
                check(now, &actions)
                return actions
            }
            role = .leader(leader)
            actions.append(.becomeLeader(leader))
            scheduleWake(now, &actions)

        case .campaignLost(let leader, let heldBy, let revision, let now):
            campaignPending = false
            guard revision >= leaderRevision else {
                check(now, &actions)
                return actions
            }
            leaderRevision = revision
            if let leader {
                observe(leader, heldBy: heldBy, now, &actions)
            } else {
                nextCampaign = now  // the counter moved under it: read it again and retry
                check(now, &actions)
            }

        case .campaignFailed(let now), .campaignDeferred(_, let now):
            // Tried again after the interval: the node deferred to may have won by then
            // (the watch says so), or gone (its record ends with its lease).
            campaignPending = false
            nextCampaign = now + configuration.retryInterval
            scheduleWake(now, &actions)

        case .leaderObserved(let leader, let heldBy, let revision, let now):
            guard revision >= leaderRevision else { return [] }
            leaderRevision = revision
            if let leader {
                observe(leader, heldBy: heldBy, now, &actions)
            } else {
                stepDown("the leader key is gone", now, &actions)
                role = .candidate
                nextCampaign = now
                check(now, &actions)
            }

        case .tick(let now):
            check(now, &actions)
        }
        return actions
    }

    // MARK: Transitions

    /// The leader key names `leader`, bound to lease `heldBy`.
    private mutating func observe(_ leader: ClusterLeader, heldBy: Int64, _ now: Instant, _ actions: inout [Action]) {
        knownEpoch = max(knownEpoch, leader.epoch)
        if leader.node == configuration.node {
            if case .leader(let current) = role, current == leader { return }
            // Its own campaign's key, seen by the watch before the campaign's answer.
            if campaignPending { return }
            // The key names this node but it does not lead by it.
            stepDown("the leader key names this node in epoch \(leader.epoch), but it does not lead by it", now, &actions)
            role = .candidate
            if heldBy != 0, heldBy == lease {
                // Bound to its own lease (a win it could not use): giving the lease up
                // deletes the key, and it campaigns again under a new one.
                abandonLease(&actions)
                nextCampaign = now
            } else {
                // Left from before a restart, under a lease nobody renews: the key goes
                // when that lease ends, and the watch says so.
                nextCampaign = nil
            }
            check(now, &actions)
            return
        }
        if case .follower(let current) = role, current == leader { return }
        stepDown("\(leader) leads now", now, &actions)
        role = .follower(leader)
        nextCampaign = nil
        actions.append(.follow(leader))
    }

    /// Stops leading, if it was, saying why.
    private mutating func stepDown(_ reason: String, _ now: Instant, _ actions: inout [Action]) {
        guard case .leader = role else { return }
        role = .candidate
        actions.append(.stopLeading(reason: reason))
    }

    /// What the time `now` calls for: fencing first, then the lease, then a campaign.
    private mutating func check(_ now: Instant, _ actions: inout [Action]) {
        if case .leader = role, let until = acknowledgeUntil, now >= until {
            stepDown("the lease could not be renewed in time", now, &actions)
            // The key and the old lease end at etcd by themselves; a fresh lease lets
            // this node campaign again once they have.
            abandonLease(&actions)
        }
        if let end = leaseEnd, now >= end {
            // Not renewed in time: etcd has ended it (or will, having granted no more).
            lease = nil
            leaseEnd = nil
            renewalPending = false
        }
        if lease == nil {
            if !grantPending, nextRenewal.map({ now >= $0 }) ?? true { requestLease(&actions) }
        } else if let lease, !renewalPending, let due = nextRenewal, now >= due {
            renewalPending = true
            actions.append(.renewLease(id: lease))
        }
        if case .candidate = role, let due = nextCampaign, now >= due { campaign(now, &actions) }
        scheduleWake(now, &actions)
    }

    /// Revokes the lease it holds (deleting whatever key is bound to it) and forgets it,
    /// so the next `check` asks for a new one.
    private mutating func abandonLease(_ actions: inout [Action]) {
        if let lease { actions.append(.revokeLease(id: lease)) }
        lease = nil
        leaseEnd = nil
        nextRenewal = nil
        renewalPending = false
    }

    private mutating func requestLease(_ actions: inout [Action]) {
        guard !grantPending else { return }
        grantPending = true
        nextRenewal = nil
        actions.append(.grantLease(ttl: configuration.ttl))
    }

    private mutating func campaign(_ now: Instant, _ actions: inout [Action]) {
        guard let lease, !campaignPending, let end = leaseEnd, now < end - configuration.safetyMargin else {
            // Without a usable lease the campaign waits for the next grant.
            if nextCampaign == nil { nextCampaign = now }
            return
        }
        campaignPending = true
        nextCampaign = nil
        actions.append(.campaign(lease: lease, minimumEpoch: knownEpoch + 1))
    }

    /// Asks for a tick at the earliest instant something is due.
    private func scheduleWake(_ now: Instant, _ actions: inout [Action]) {
        var due: [Instant] = []
        if let acknowledgeUntil { due.append(acknowledgeUntil) }
        if let leaseEnd { due.append(leaseEnd) }
        if let nextRenewal { due.append(nextRenewal) }
        if case .candidate = role, let nextCampaign { due.append(nextCampaign) }
        if let first = due.min() { actions.append(.wake(at: max(first, now))) }
    }
}
