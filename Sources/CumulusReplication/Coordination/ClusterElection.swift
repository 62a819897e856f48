import CumulusLog
import CumulusModel
import Logging
import Synchronization

/// Runs ``LeaderElection`` against etcd: performs its actions with an ``EtcdClient``,
/// feeds the answers back as events, watches the leader key, and keeps the time.
///
/// The server reads two things from it: ``roles``, each change of this node's role (to
/// start leading, or follow someone else), and ``fence``, which says at any instant
/// whether a write may be acknowledged. The fence holds the end of the lease as the
/// machine computed it, so it stops acknowledging on time even while the driver waits
/// on a slow etcd.
public actor ClusterElection {
    /// Whether a write may be acknowledged now: a lock-protected deadline, cheap enough to
    /// read before every acknowledgement.
    /// It is the `lease` stage of the writer's ``AcknowledgementGate``.
    public final class Fence: AcknowledgementPolicy {
        private let until = Mutex<ContinuousClock.Instant?>(nil)

        /// A fence that acknowledges nothing.
        public init() {}

        /// Whether this node leads and its lease has the safety margin left.
        public func mayAcknowledge() -> Bool {
            guard let until = until.withLock({ $0 }) else { return false }
            return ContinuousClock.now < until
        }

        /// The instant from which nothing may be acknowledged, while leading.
        public var acknowledgeUntil: ContinuousClock.Instant? { until.withLock { $0 } }

        func set(_ instant: ContinuousClock.Instant?) { until.withLock { $0 = instant } }

        /// What a write of a group answered after the lease may have ended gets.
        static let lapsed = CumulusError(
            .serverRejectedRequest,
            "this node's leadership lapsed before the write could be acknowledged; it may or may not have been saved — check, then retry")

        /// Releases a group only while the lease holds, asked as it is answered.
        public func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void) {
            answer(mayAcknowledge() ? nil : Self.lapsed)
        }
    }

    /// The etcd client (owned by the caller).
    public nonisolated let client: EtcdClient
    /// The cluster's keys.
    public nonisolated let keys: ClusterKeys
    /// Whether writes may be acknowledged.
    public nonisolated let fence = Fence()
    /// Each role this node takes, in order, starting with the first it learns.
    public nonisolated let roles: AsyncStream<LeaderElection.Role>
    /// Who this node is and its timing.
    public nonisolated let configuration: LeaderElection.Configuration

    /// This node's epoch and durable head, published for other candidates to compare.
    public typealias Progress = @Sendable () -> (epoch: UInt64, head: UInt64)

    private var machine: LeaderElection
    private let progress: Progress
    private let roleSink: AsyncStream<LeaderElection.Role>.Continuation
    private let logger: Logger
    private var published: LeaderElection.Role?
    private let latest = Mutex<LeaderElection.Role>(.candidate)

    /// This node's role as last published, readable without waiting on the actor.
    public nonisolated var currentRole: LeaderElection.Role { latest.withLock { $0 } }
    /// Why this node last stopped leading, until taken (``takeStopReason()``).
    private let stopReason = Mutex<String?>(nil)

    /// Why this node last stopped leading (its lease lapsed, it resigned, another
    /// holds the key), once: the role that follows records it in the node's history.
    public nonisolated func takeStopReason() -> String? { stopReason.withLock { reason in defer { reason = nil }; return reason } }
    private var wakeScheduled: ContinuousClock.Instant?

    /// A node of `keys`' cluster as `configuration` describes it, whose log's epoch and
    /// head `progress` tells (it takes only an epoch after its log's).
    public init(
        client: EtcdClient, keys: ClusterKeys, configuration: LeaderElection.Configuration, progress: @escaping Progress,
        logger: Logger
    ) {
        self.client = client
        self.keys = keys
        self.progress = progress
        self.configuration = configuration
        self.machine = LeaderElection(configuration, knownEpoch: progress().epoch)
        self.logger = logger
        (roles, roleSink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// This node's role now.
    public var role: LeaderElection.Role { machine.role }

    /// Callers of ``nextRole(after:)`` waiting for the role to change.
    private var roleWaiters: [UInt64: CheckedContinuation<LeaderElection.Role, Never>] = [:]
    private var lastRoleWaiter: UInt64 = 0

    /// This node's role once it is not `current` any more: at once if it is already
    /// another, else when the election publishes another, or (with the role then)
    /// when the calling task is cancelled. What a caller waits on instead of polling
    /// ``role``.
    public func nextRole(after current: LeaderElection.Role) async -> LeaderElection.Role {
        guard machine.role == current, !Task.isCancelled else { return machine.role }
        lastRoleWaiter += 1
        let id = lastRoleWaiter
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in roleWaiters[id] = continuation }
        } onCancel: {
            // Runs after the continuation is registered: both need the actor.
            Task { await self.resumeRoleWaiter(id) }
        }
    }

    private func resumeRoleWaiter(_ id: UInt64) {
        roleWaiters.removeValue(forKey: id)?.resume(returning: machine.role)
    }

    /// Takes part in the election until the calling task is cancelled; then stops
    /// acknowledging and gives up its lease, so another node can lead at once.
    public func run() async {
        let (events, sink) = AsyncStream<LeaderElection.Event>.makeStream(bufferingPolicy: .unbounded)
        await withTaskGroup(of: Void.self) { group in
            let client = self.client
            let keys = self.keys
            let retry = machine.configuration.retryInterval
            let ttl = machine.configuration.ttl
            let logger = self.logger
            group.addTask { await Self.watchLeader(client, keys, retry: retry, logger: logger, sink) }
            group.addTask { await Self.pollLeader(client, keys, every: ttl, sink) }
            group.addTask { await self.publishProgress() }
            sink.yield(.started(at: .now))
            for await event in events {
                if Task.isCancelled { break }
                for action in machine.handle(event) { await perform(action, sink, &group) }
                fence.set(machine.acknowledgeUntil)
                publishRole()
            }
            group.cancelAll()
        }
        await resign()
    }

    /// Stops acknowledging and revokes the lease (deleting the leader key if it holds it).
    private func resign() async {
        fence.set(nil)
        let lease = machine.lease
        if let lease {
            for case .stopLeading(let reason) in machine.handle(.leaseLost(id: lease, at: .now)) {
                logger.notice("cluster: stopped leading: \(reason)")
            }
            // The calling task is cancelled, which would cancel the request too: the
            // revocation runs in a task of its own.
            let client = self.client
            await Task { try? await client.revoke(lease) }.value
        }
        publishRole()
        roleSink.finish()
    }

    private func perform(
        _ action: LeaderElection.Action, _ sink: AsyncStream<LeaderElection.Event>.Continuation,
        _ group: inout TaskGroup<Void>
    ) async {
        let client = self.client
        let keys = self.keys
        let configuration = machine.configuration
        let logger = self.logger
        switch action {
        case .grantLease(let ttl):
            group.addTask {
                let sent = ContinuousClock.now
                do {
                    let lease = try await client.grantLease(ttl: ttl)
                    sink.yield(.leaseGranted(id: lease.id, ttl: lease.ttl, requestedAt: sent))
                } catch {
                    logger.warning("cluster: cannot get a lease from etcd: \(error)")
                    sink.yield(.leaseGrantFailed(at: .now))
                }
            }
        case .renewLease(let id):
            group.addTask {
                let sent = ContinuousClock.now
                do {
                    if let ttl = try await client.keepAlive(id) {
                        sink.yield(.leaseRenewed(id: id, ttl: ttl, requestedAt: sent))
                    } else {
                        logger.warning("cluster: etcd no longer holds lease \(id)")
                        sink.yield(.leaseLost(id: id, at: .now))
                    }
                } catch {
                    logger.warning("cluster: cannot renew lease \(id): \(error)")
                    sink.yield(.leaseRenewFailed(id: id, at: .now))
                }
            }
        case .campaign(let lease, let minimumEpoch):
            let progress = self.progress
            group.addTask {
                do {
                    let mine = progress()
                    if let ahead = try await Self.nodeAhead(client, keys, configuration.node, mine) {
                        logger.info("cluster: deferring to \(ahead.node), whose log is further on (epoch \(ahead.epoch), head \(ahead.head))")
                        sink.yield(.campaignDeferred(to: ahead.node, at: .now))
                        return
                    }
                    sink.yield(
                        try await Self.campaign(
                            client, keys, configuration, lease: lease, minimumEpoch: minimumEpoch, emptyLog: mine.head == 0))
                } catch {
                    logger.warning("cluster: campaign failed: \(error)")
                    sink.yield(.campaignFailed(at: .now))
                }
            }
        case .revokeLease(let id):
            // Awaited here, before any later action: a grant and campaign that followed
            // it must not find the key it deletes still there.
            do { try await client.revoke(id) } catch { logger.warning("cluster: cannot revoke lease \(id): \(error)") }
        case .becomeLeader(let leader):
            logger.notice("cluster: this node leads, epoch \(leader.epoch)")
        case .stopLeading(let reason):
            stopReason.withLock { $0 = reason }
            fence.set(nil)
            logger.warning("cluster: stopped leading: \(reason)")
        case .follow(let leader):
            logger.notice("cluster: following \(leader)")
        case .wake(let at):
            if let scheduled = wakeScheduled, scheduled <= at, scheduled > .now { return }
            wakeScheduled = at
            group.addTask {
                try? await Task.sleep(until: at, clock: .continuous)
                sink.yield(.tick(.now))
            }
        }
    }

    private func publishRole() {
        let role = machine.role
        guard role != published else { return }
        published = role
        latest.withLock { $0 = role }
        roleSink.yield(role)
        let waiting = roleWaiters.values
        roleWaiters.removeAll()
        for waiter in waiting { waiter.resume(returning: role) }
    }

    // MARK: etcd conversations

    /// Keeps this node's record in etcd, under its lease: on every change of its head,
    /// epoch or lease (checked every 100 ms), and once a second regardless.
    private func publishProgress() async {
        var published: (record: ClusterNode, lease: Int64, at: ContinuousClock.Instant)?
        let configuration = machine.configuration
        while !Task.isCancelled {
            if let lease = machine.lease {
                let now = progress()
                let record = ClusterNode(node: configuration.node, url: configuration.url, epoch: now.epoch, head: now.head)
                let due = published.map { $0.record != record || $0.lease != lease || ContinuousClock.now - $0.at >= .seconds(1) }
                if due ?? true {
                    do {
                        try await client.put(keys.node(configuration.node), record.encoded, lease: lease)
                        published = (record, lease, .now)
                    } catch {
                        // The lease may have just ended; the next grant brings a new one.
                        published = nil
                    }
                }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// A live node other than `me` whose log is further on than `mine`, if any.
    static func nodeAhead(
        _ client: EtcdClient, _ keys: ClusterKeys, _ me: String, _ mine: (epoch: UInt64, head: UInt64)
    ) async throws -> ClusterNode? {
        try await client.get(prefix: keys.nodes)
            .compactMap { ClusterNode.decode($0.value) }
            .filter { $0.node != me && $0.isAhead(ofEpoch: mine.epoch, head: mine.head) }
            .max { ($0.epoch, $0.head) < ($1.epoch, $1.head) }
    }

    /// The campaign's transaction: the leader key for this node if nobody holds it, and
    /// the next epoch if nobody took one since the counter was read. A node whose log
    /// is empty runs it only for a new cluster (no epoch taken yet): in one that has
    /// had a leader, it would start a second history beside the cluster's log.
    static func campaign(
        _ client: EtcdClient, _ keys: ClusterKeys, _ configuration: LeaderElection.Configuration, lease: Int64,
        minimumEpoch: UInt64, emptyLog: Bool
    ) async throws -> LeaderElection.Event {
        let (counter, _) = try await client.get(keys.epoch)
        if emptyLog, counter != nil { return .campaignDeferred(to: "a node holding the cluster's log", at: .now) }
        var stored: UInt64 = 0
        if let counter {
            guard let value = UInt64(String(decoding: counter.value, as: UTF8.self)) else {
                throw CoordinationError.protocolViolation("\(keys.epoch) does not hold an epoch number")
            }
            stored = value
        }
        let leader = ClusterLeader(node: configuration.node, url: configuration.url, epoch: max(stored + 1, minimumEpoch))
        let outcome = try await client.run(
            EtcdTransaction(
                compare: [
                    .createRevision(keys.leader, equals: 0),
                    .modRevision(keys.epoch, equals: counter?.modRevision ?? 0),
                ],
                success: [
                    .put(keys.leader, leader.encoded, lease: lease),
                    .put(keys.epoch, Array(String(leader.epoch).utf8), lease: nil),
                ],
                failure: [.get(keys.leader)]))
        if outcome.succeeded { return .campaignWon(leader, revision: outcome.revision, at: .now) }
        guard let current = outcome.reads.first ?? nil else {
            return .campaignLost(nil, heldBy: 0, revision: outcome.revision, at: .now)
        }
        return .campaignLost(
            try ClusterLeader.decode(current.value), heldBy: current.lease, revision: current.modRevision, at: .now)
    }

    /// Reads the leader key, then watches it from just after that read, again after any
    /// failure, until cancelled.
    static func watchLeader(
        _ client: EtcdClient, _ keys: ClusterKeys, retry: Duration, logger: Logger,
        _ sink: AsyncStream<LeaderElection.Event>.Continuation
    ) async {
        while !Task.isCancelled {
            do {
                let revision = try await readLeader(client, keys, sink)
                for try await event in client.watch(keys.leader, from: revision + 1) {
                    switch event {
                    case .put(let value):
                        sink.yield(
                            .leaderObserved(
                                try ClusterLeader.decode(value.value), heldBy: value.lease, revision: value.modRevision,
                                at: .now))
                    case .delete(_, let revision):
                        sink.yield(.leaderObserved(nil, heldBy: 0, revision: revision, at: .now))
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("cluster: watching \(keys.leader): \(error)")
            }
            try? await Task.sleep(for: retry)
        }
    }

    /// Reads the leader key every `interval`: the watch's safety net, should its
    /// connection stall without breaking.
    static func pollLeader(
        _ client: EtcdClient, _ keys: ClusterKeys, every interval: Duration,
        _ sink: AsyncStream<LeaderElection.Event>.Continuation
    ) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            _ = try? await readLeader(client, keys, sink)
        }
    }

    /// Reads the leader key and reports it; returns the store's revision at the read.
    @discardableResult
    private static func readLeader(
        _ client: EtcdClient, _ keys: ClusterKeys, _ sink: AsyncStream<LeaderElection.Event>.Continuation
    ) async throws -> Int64 {
        let (current, revision) = try await client.get(keys.leader)
        let leader = try current.map { try ClusterLeader.decode($0.value) }
        sink.yield(.leaderObserved(leader, heldBy: current?.lease ?? 0, revision: current?.modRevision ?? revision, at: .now))
        return revision
    }
}
