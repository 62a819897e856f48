import CumulusModel
import CumulusStorage

/// The CPU time one request may spend on one thread: a query page's walk, or the
/// writer's planning of one operation (issue 40). The work checks it cooperatively,
/// every ``checkEvery`` records read or items planned, so an honest request pays one
/// clock read per hundred-odd records; a request that overruns ends with
/// `limitExceeded`, saying which bound.
///
/// CPU time, not wall time: it is read from the calling thread's clock
/// (`CLOCK_THREAD_CPUTIME_ID`), so a loaded machine or a thread that waits for a
/// lock does not count against the request. Both uses run on one thread from start
/// to end (inside one LMDB transaction), so the thread's clock is the request's.
///
/// A class, not a value: the walks that spend it are nested closures over one
/// executor, and a meter they share by reference needs no `inout` through each.
/// Confined to the thread that ``start()``ed it, so not `Sendable`.
final class WorkBudget {
    /// Units of work between two reads of the clock.
    static let checkEvery = 128

    /// What the request is, for the message (`"this query page"`, `"this operation"`).
    let what: String
    /// The CPU time the request may spend.
    let limit: Duration
    private var started: Duration
    private var sinceCheck = 0

    /// A budget of `limit`, starting now on this thread.
    init(_ limit: Duration, for what: String) {
        self.limit = limit
        self.what = what
        started = ThreadCPUClock.now()
    }

    /// Starts the budget again, on the calling thread.
    func start() {
        started = ThreadCPUClock.now()
        sinceCheck = 0
    }

    /// Counts one unit of work; throws `limitExceeded` once the budget is spent.
    func spend() throws {
        sinceCheck += 1
        guard sinceCheck >= Self.checkEvery else { return }
        sinceCheck = 0
        try check()
    }

    /// Throws `limitExceeded` if the budget is spent.
    func check() throws {
        let used = ThreadCPUClock.now() - started
        guard used > limit else { return }
        let milliseconds = limit.milliseconds
        throw CumulusError(
            .limitExceeded,
            "\(what) used more than its \(milliseconds) ms of CPU time (the per-request budget); "
                + "narrow it with filters on indexed fields, or split it")
    }
}
