import CumulusStorage
import Dispatch
import Foundation
import Synchronization

/// Runs views syncs (``LogStore/syncViews(closing:)``) on a thread of its own while a
/// node writes: every ``Policy/interval``, or sooner once ``Policy/commits`` commits
/// were made since the last, and only when there is something new to cover.
///
/// The writer never waits for one: a sync flushes pages the views' transactions have
/// already committed, beside the writer, which goes on committing. Syncs bound how much
/// of the views the operating system holds unwritten, and let views left idle by a
/// crash of the machine be trusted (``ViewsDurability``); views written after the last
/// sync are made again from the log after such a crash, whatever the policy.
public final class ViewsSyncer: Sendable {
    /// When views syncs happen (`cumulus serve --views-sync-ms`, `--views-sync-commits`).
    public struct Policy: Sendable, Hashable {
        /// Longest time between syncs while commits are made.
        public var interval: Duration = .seconds(5)
        /// Most commits between syncs.
        public var commits: Int = 100_000

        /// The default policy: every 5 s or 100,000 commits.
        public init() {}

        /// A policy.
        public init(interval: Duration, commits: Int) {
            self.interval = interval
            self.commits = commits
        }
    }

    /// What the syncer has done, for metrics.
    public struct Statistics: Sendable, Hashable {
        /// Views syncs run.
        public var syncs = 0
        /// The applied sequence the last sync covered.
        public var lastSynced: UInt64 = 0
        /// Why the last sync failed, if it did (the next one tries again).
        public var lastError: String?
    }

    private let store: LogStore
    private let policy: Policy
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let state: Mutex<State>

    private struct State {
        var closed = false
        var sinceSync = 0
        var statistics = Statistics()
    }

    /// Starts syncing the views of `store` by `policy`; `synced` is the sequence the
    /// views were last synced at (the node's open did one).
    public init(store: LogStore, policy: Policy = Policy(), synced: UInt64) {
        self.store = store
        self.policy = policy
        var initial = State()
        initial.statistics.lastSynced = synced
        state = Mutex(initial)
        let thread = Thread { [self] in self.run() }
        thread.name = "cumulus-views-sync"
        thread.start()
    }

    /// What the syncer has done so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Tells the syncer `count` more commits were made (the writer's group observer).
    public func noteCommits(_ count: Int) {
        let due = state.withLock { state -> Bool in
            state.sinceSync += count
            return state.sinceSync >= policy.commits
        }
        if due { wakeUp.signal() }
    }

    /// Stops the thread and, with the writer already closed, runs the last sync,
    /// marking the views closed cleanly. Call once; later calls do nothing.
    public func close() throws {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wakeUp.signal()
        stopped.wait()
        try store.syncViews(closing: true)
    }

    private func run() {
        while true {
            _ = wakeUp.wait(timeout: .now() + .nanoseconds(Int(policy.interval.nanoseconds)))
            if state.withLock({ $0.closed }) { break }
            let last = state.withLock { $0.statistics.lastSynced }
            guard store.head.sequence > last else { continue }
            state.withLock { $0.sinceSync = 0 }
            do {
                let synced = try store.syncViews()
                state.withLock {
                    $0.statistics.syncs += 1
                    $0.statistics.lastSynced = synced
                    $0.statistics.lastError = nil
                }
            } catch {
                state.withLock { $0.statistics.lastError = "\(error)" }
            }
        }
        stopped.signal()
    }
}
