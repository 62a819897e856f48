import CumulusModel
import Synchronization

/// The per-request deadline (``ServerLimits/requestTimeout``): the API's answer, or
/// `TRY_AGAIN_LATER` once the deadline passes, whichever comes first.
///
/// **Why not a task group.** A group waits for all its children before it returns, and
/// the API's work is mostly synchronous (LMDB reads) or a wait on the single writer:
/// cancelling it does not end it. So the work runs in a task of its own, and the
/// caller is resumed by whichever of the work and the timer finishes first. Work that
/// outlives its deadline runs to its end in the background and its answer is dropped:
/// it cannot be stopped part-way without leaving a commit half planned, and a client
/// treats the refusal as it treats any timeout (a commit may still have landed).
enum RequestDeadline {
    /// `work`'s answer if it comes within `timeout`, else `TRY_AGAIN_LATER` with
    /// `retryAfter` (counted in `metrics` as ``ServerLimits/Hit/requestTimeout``).
    /// With `hangUp`, the work's task is cancelled when the client goes: work that
    /// only waits (a long poll) then ends; other work ignores it.
    static func answer(
        within timeout: Duration, metrics: ServerMetrics?, hangUp: HangUpHandler.Signal? = nil,
        _ work: @escaping @Sendable () async -> APIResponse
    ) async -> APIResponse {
        let race = Race()
        defer { hangUp?.unwatch() }
        return await withCheckedContinuation { continuation in
            race.start(continuation)
            race.timer(Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                if race.finish(Self.refusal(timeout)) { metrics?.recordLimitHit(.requestTimeout) }
            })
            let worker = Task {
                if race.finish(await work()) { race.cancelTimer() }
            }
            hangUp?.watch { worker.cancel() }
        }
    }

    /// Who answers first: the caller's continuation, resumed once, and the timer to
    /// cancel when the work wins.
    private final class Race: Sendable {
        private let state = Mutex<(waiter: CheckedContinuation<APIResponse, Never>?, timer: Task<Void, Never>?)>((nil, nil))

        func start(_ waiter: CheckedContinuation<APIResponse, Never>) { state.withLock { $0.waiter = waiter } }

        func timer(_ task: Task<Void, Never>) { state.withLock { $0.timer = task } }

        func cancelTimer() { state.withLock { $0.timer }?.cancel() }

        /// Resumes the caller with `answer` if nothing did yet; `true` if this did.
        func finish(_ answer: APIResponse) -> Bool {
            guard let waiter = state.withLock({ $0.waiter.take() }) else { return false }
            waiter.resume(returning: answer)
            return true
        }
    }

    /// What a request past its deadline gets: CloudKit's answer for a busy server,
    /// with when to retry in the body (`retryAfter`, seconds), as CloudKit sends it.
    static func refusal(_ timeout: Duration) -> APIResponse {
        .error(
            .tryAgainLater,
            "the server did not answer within its \(timeout.components.seconds)-second request deadline; "
                + "retry (a change this request made may still have been saved)",
            retryAfter: 1)
    }
}
