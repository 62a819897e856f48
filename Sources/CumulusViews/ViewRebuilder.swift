import CumulusLog
import CumulusStorage

/// Derives views from the log: `rebuild` drops every view and replays the whole log
/// into it, through the same ``Views/apply(_:in:)`` the writer uses.
public enum ViewRebuilder {
    /// Commits replayed per write transaction: large enough to amortize the fsync,
    /// small enough to keep a transaction's dirty pages modest.
    public static let batchSize = 5_000

    /// Clears `views` (which must live in `store`'s environment) and replays every
    /// commit of `store` into them. `progress` gets the number of commits replayed.
    /// Returns the number of commits replayed.
    @discardableResult
    public static func rebuild(_ views: Views, from store: LogStore, progress: ((UInt64) -> Void)? = nil) throws -> UInt64 {
        try store.environment.write { txn in
            for table in views.tables.all { try txn.clear(table) }
        }
        return try replay(store, into: views, in: store.environment, progress: progress)
    }

    /// Replays every commit of `store` into `views` living in `environment` (the
    /// store's own, or a scratch one for verification), in batches.
    @discardableResult
    public static func replay(
        _ store: LogStore, into views: Views, in environment: LMDBEnvironment, progress: ((UInt64) -> Void)? = nil
    ) throws -> UInt64 {
        let last = try store.lastSequence()
        var next: UInt64 = 1
        while next <= last {
            // Read a batch, then apply it: a write may not run inside a read on one thread.
            let batch = try store.range(from: next, through: min(last, next + UInt64(batchSize) - 1))
            guard let end = batch.last?.sequence else {
                throw LogError.missing(sequence: next)
            }
            try environment.write { txn in
                for commit in batch { try views.apply(commit, in: txn) }
            }
            next = end + 1
            progress?(end)
        }
        return last
    }
}
