import Synchronization

/// One step of a writer's ``AcknowledgementGate``: what it asks before a write is
/// queued, and what it waits for once the write's group is durable.
///
/// **Thread rules.** ``admit()`` runs in the writing caller's task and may wait;
/// ``release(through:_:)`` is called on the writer's thread and must not block it: it
/// calls `answer` at once or later, from any thread, exactly once.
public protocol AcknowledgementPolicy: Sendable {
    /// `nil` lets a write be queued; an error refuses it before anything is written.
    func admit() async -> (any Error)?
    /// Calls `answer` once the durable group ending at `sequence` may be acknowledged
    /// (`nil`), or with the error each of its writes gets instead.
    func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void)
}

extension AcknowledgementPolicy {
    /// Admits every write.
    public func admit() async -> (any Error)? { nil }
    /// Releases every group at once.
    public func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void) { answer(nil) }
}

/// Everything that stands between a write and its answer, in one place: the node that
/// owns a ``LogWriter`` decides what is in it, and the writer only asks it.
///
/// - A **refusal** turns every write away before it is queued: a follower, a read-only
///   node, a candidate or a superseded leader (``refuse(_:)``). Frames a leader sends a
///   follower are not writes, and pass.
/// - **Policies** (``AcknowledgementPolicy``), one per ``Stage``, each admit a write and
///   then hold its durable group's answer; they run in the order of their stages.
///   Semi-synchronous commit is the `replicas` stage, a cluster's lease the `lease` one.
///
/// A commit that a policy refuses to acknowledge stays in the log, durable but
/// unacknowledged: the caller learns that its outcome is unknown.
public final class AcknowledgementGate: Sendable {
    /// Where a policy stands in the order a group passes: later stages are asked when
    /// the earlier ones have released it.
    public enum Stage: Int, Sendable, CaseIterable, Comparable {
        /// Waits for others to hold the group (semi-synchronous commit).
        case replicas
        /// Checks, as the group is finally answered, that this node may still answer for
        /// its log (a cluster leader's lease): asked last, since the waits before it take
        /// time in which the lease may run out.
        case lease

        /// In the order groups pass the stages.
        public static func < (lhs: Stage, rhs: Stage) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private struct State {
        var refusal: (any Error)?
        var policies: [Stage: any AcknowledgementPolicy] = [:]
        /// The policies in the order of their stages, made when one is installed: every
        /// write reads it, so it is not made again for each.
        var ordered: [any AcknowledgementPolicy] = []
    }

    private let state = Mutex(State())

    /// A gate that admits every write and answers each group once durable.
    public init() {}

    /// Refuses every later write with `error`; `nil` lets writes in again.
    public func refuse(_ error: (any Error)?) {
        state.withLock { $0.refusal = error }
    }

    /// The error writes are refused with now, if any.
    public var refusal: (any Error)? { state.withLock { $0.refusal } }

    /// Puts `policy` at `stage`, replacing the one there (`nil` removes it).
    public func install(_ policy: (any AcknowledgementPolicy)?, at stage: Stage) {
        state.withLock { state in
            state.policies[stage] = policy
            state.ordered = Stage.allCases.compactMap { state.policies[$0] }
        }
    }

    /// The refusal, else each policy's admission in stage order: the first error wins.
    func admit() async -> (any Error)? {
        let (refusal, policies) = state.withLock { ($0.refusal, $0.ordered) }
        if let refusal { return refusal }
        for policy in policies {
            if let error = await policy.admit() { return error }
        }
        return nil
    }

    /// Passes the group ending at `sequence` through each policy in stage order, read
    /// once now; `answer` gets the first error, or `nil` when every stage released it.
    func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void) {
        Self.pass(state.withLock { $0.ordered }[...], sequence, answer)
    }

    private static func pass(
        _ policies: ArraySlice<any AcknowledgementPolicy>, _ sequence: UInt64,
        _ answer: @escaping @Sendable ((any Error)?) -> Void
    ) {
        guard let first = policies.first else { return answer(nil) }
        let rest = policies.dropFirst()
        first.release(through: sequence) { error in
            if let error { answer(error) } else { pass(rest, sequence, answer) }
        }
    }
}
