import CumulusEngine
import CumulusLog
import CumulusModel
import Logging
import Synchronization

/// Semi-synchronous commit (`--sync-replicas N`): a leader acknowledges a write only
/// once N followers have durably appended it, so losing the leader loses no write it
/// acknowledged while one of those followers survives (and the election prefers the
/// node furthest on).
///
/// **Before a write.** With fewer than N followers connected, a write waits for them up
/// to ``Policy/timeout``; then it is refused with `TRY_AGAIN_LATER` before anything is
/// written anywhere, or, with ``Policy/Fallback/async``, written without confirmation
/// (counted in ``fallbacks`` and logged).
///
/// **After a write.** The group holding it is durable on the leader; its callers are
/// answered when N connected followers have reported a durable position at or past the
/// group's last commit. If that takes longer than the timeout (a follower died on the
/// way), the callers get `TRY_AGAIN_LATER` saying the outcome is unknown (the commit is
/// in the leader's log and will reach followers later), or success under `async`.
public final class SyncReplication: AcknowledgementPolicy {
    /// How many followers must confirm, for how long to wait, and what then.
    public struct Policy: Sendable, Hashable {
        /// What to do when followers do not confirm in time.
        public enum Fallback: String, Sendable, Hashable, CaseIterable {
            /// Refuse (before writing) or report the outcome unknown (after).
            case fail
            /// Go on without confirmation, and count it.
            case async
        }

        /// Followers that must hold a write before it is acknowledged (at least 1).
        public var replicas: Int
        /// The longest a write waits for followers, before and after it is written.
        public var timeout: Duration
        /// What happens when they do not confirm within it.
        public var fallback: Fallback

        /// A policy.
        public init(replicas: Int, timeout: Duration = .seconds(5), fallback: Fallback = .fail) {
            self.replicas = replicas
            self.timeout = timeout
            self.fallback = fallback
        }
    }

    /// The policy.
    public let policy: Policy
    let registry: FollowerRegistry
    let logger: Logger
    private let waiters = Mutex<[Waiter]>([])
    private let fallbackCount = Atomic<Int>(0)
    private let sweeper = Mutex<Task<Void, Never>?>(nil)
    /// Writes waiting, before they are written, for enough followers to connect; each
    /// resumed with whether they did, by ``positionsChanged()`` or its deadline.
    private let admissions = Mutex<[UInt64: CheckedContinuation<Bool, Never>]>([:])
    private let lastAdmission = Atomic<UInt64>(0)

    private struct Waiter {
        let sequence: UInt64
        let deadline: ContinuousClock.Instant
        let acknowledge: @Sendable ((any Error)?) -> Void
    }

    init(policy: Policy, registry: FollowerRegistry, logger: Logger) {
        self.policy = policy
        self.registry = registry
        self.logger = logger
    }

    /// Groups of writes acknowledged without the followers' confirmation (`async`
    /// fallback).
    public var fallbacks: Int { fallbackCount.load(ordering: .relaxed) }

    /// Followers with an open stream.
    var connected: Int { registry.snapshot().filter { $0.entry.openStreams > 0 }.count }

    /// Connected followers that reported holding `sequence`.
    func holders(of sequence: UInt64) -> Int {
        registry.snapshot().filter { $0.entry.openStreams > 0 && $0.entry.applied >= sequence }.count
    }

    /// The check before a write (its stage of ``AcknowledgementGate``): waits, until
    /// the policy's timeout, for enough followers to connect; woken by the registry's
    /// change that brings them, not by polling.
    public func admit() async -> (any Error)? {
        if connected >= policy.replicas { return nil }
        if await connections(until: .now + policy.timeout) { return nil }
        if policy.fallback == .async {
            // Counted once its group is acknowledged unconfirmed (`hold`).
            logger.warning(
                "semi-synchronous commit: a write goes ahead with \(connected) of \(policy.replicas) follower(s) connected")
            return nil
        }
        return CumulusError(
            .serverRejectedRequest,
            "fewer than \(policy.replicas) follower(s) are connected to confirm writes (\(connected) now); nothing was written — retry later")
    }

    /// Whether enough followers connect before `deadline` (false at once if the task
    /// is cancelled).
    private func connections(until deadline: ContinuousClock.Instant) async -> Bool {
        let id = lastAdmission.add(1, ordering: .relaxed).newValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                admissions.withLock { $0[id] = continuation }
                // A stream may have opened, or the task been cancelled, before the
                // continuation was there to be resumed.
                if connected >= policy.replicas {
                    resumeAdmission(id, with: true)
                } else if Task.isCancelled {
                    resumeAdmission(id, with: false)
                } else {
                    Task { [weak self] in
                        try? await Task.sleep(until: deadline, clock: .continuous)
                        self?.resumeAdmission(id, with: false)
                    }
                }
            }
        } onCancel: {
            resumeAdmission(id, with: false)
        }
    }

    /// Resumes the admission `id` with `connected`, once (later calls find it gone).
    private func resumeAdmission(_ id: UInt64, with connected: Bool) {
        admissions.withLock { $0.removeValue(forKey: id) }?.resume(returning: connected)
    }

    /// The barrier after a group (its stage of ``AcknowledgementGate``): answered once
    /// enough connected followers hold `sequence`, or when the timeout runs out.
    public func release(through sequence: UInt64, _ acknowledge: @escaping @Sendable ((any Error)?) -> Void) {
        if holders(of: sequence) >= policy.replicas {
            acknowledge(nil)
            return
        }
        if policy.fallback == .async, connected < policy.replicas {
            // Let in without enough followers: nothing is coming to confirm it.
            noteFallback("commit \(sequence) was acknowledged with \(connected) of \(policy.replicas) follower(s) connected")
            acknowledge(nil)
            return
        }
        waiters.withLock { $0.append(Waiter(sequence: sequence, deadline: .now + policy.timeout, acknowledge: acknowledge)) }
        startSweeper()
        // A report may have come in between the count and the registration.
        positionsChanged()
    }

    /// Releases every waiting group that enough followers now hold, and every write
    /// waiting for enough of them to connect once they have (the registry calls it on
    /// each report and each stream opened or closed).
    func positionsChanged() {
        if connected >= policy.replicas {
            let admitted = admissions.withLock { waiting in
                defer { waiting.removeAll() }
                return Array(waiting.values)
            }
            for continuation in admitted { continuation.resume(returning: true) }
        }
        let ready = waiters.withLock { waiters -> [Waiter] in
            guard !waiters.isEmpty else { return [] }
            let positions = registry.snapshot().filter { $0.entry.openStreams > 0 }.map(\.entry.applied).sorted(by: >)
            guard positions.count >= policy.replicas else { return [] }
            // The position at least `replicas` connected followers hold.
            let confirmed = positions[policy.replicas - 1]
            let (done, waiting) = (waiters.filter { $0.sequence <= confirmed }, waiters.filter { $0.sequence > confirmed })
            waiters = waiting
            return done
        }
        for waiter in ready { waiter.acknowledge(nil) }
    }

    /// Answers the groups whose time ran out.
    private func expire(at now: ContinuousClock.Instant) {
        let expired = waiters.withLock { waiters -> [Waiter] in
            let (done, waiting) = (waiters.filter { $0.deadline <= now }, waiters.filter { $0.deadline > now })
            waiters = waiting
            return done
        }
        for waiter in expired {
            if policy.fallback == .async {
                noteFallback("commit \(waiter.sequence) was acknowledged without \(policy.replicas) follower(s) confirming it")
                waiter.acknowledge(nil)
            } else {
                waiter.acknowledge(CumulusError(
                    .serverRejectedRequest,
                    "the write was saved on the leader, but fewer than \(policy.replicas) follower(s) confirmed it in time; its outcome is unknown — check, then retry"))
            }
        }
    }

    /// One task answers groups whose time ran out while any group waits, sleeping
    /// until the earliest deadline (groups wait in the order of their deadlines, the
    /// timeout being one), and ends when none waits.
    private func startSweeper() {
        sweeper.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self] in
                while let self, !Task.isCancelled {
                    if let next = self.waiters.withLock({ $0.first?.deadline }) {
                        try? await Task.sleep(until: next, clock: .continuous)
                    }
                    self.expire(at: .now)
                    let idle = self.waiters.withLock { $0.isEmpty }
                    if idle {
                        let stopped = self.sweeper.withLock { task -> Bool in
                            // Re-checked under the sweeper's lock: a waiter added meanwhile keeps it.
                            guard self.waiters.withLock({ $0.isEmpty }) else { return false }
                            task = nil
                            return true
                        }
                        if stopped { return }
                    }
                }
            }
        }
    }

    private func noteFallback(_ what: String) {
        fallbackCount.add(1, ordering: .relaxed)
        logger.warning("semi-synchronous commit fell back to asynchronous: \(what)")
    }
}
