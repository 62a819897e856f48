import CumulusLog
import CumulusModel

/// Walks a log's events through a ``LogFilter``, with the chain hashes an audit
/// line cites. Streams: one commit in memory at a time.
public enum LogBrowser {
    /// Calls `body` with each entry passing `filter`, in log order, until it returns
    /// `false`. `progress` gets the sequence of each commit read (for progress bars).
    /// Returns the last sequence read.
    @discardableResult
    public static func forEach(
        in store: LogStore, filter: LogFilter, progress: ((UInt64) throws -> Void)? = nil,
        _ body: (LogEntry) throws -> Bool
    ) throws -> UInt64 {
        var last: UInt64 = 0
        try store.commitViewsWithHashes(from: filter.from, through: filter.through) { view, hash, previous in
            last = view.sequence
            try progress?(view.sequence)
            // Every entry of a commit has its actor as user: another user's commit is
            // passed over without decoding its events.
            if let user = filter.user, !view.isActor(user) { return true }
            let commit = try view.commit()
            for entry in LogEntry.entries(of: commit, hash: hash, previousHash: previous) where filter.matches(entry) {
                guard try body(entry) else { return false }
            }
            return true
        }
        return last
    }

    /// The entries passing `filter`, at most `limit` of them.
    public static func entries(in store: LogStore, filter: LogFilter, limit: Int = .max) throws -> [LogEntry] {
        var result: [LogEntry] = []
        guard limit > 0 else { return result }
        try forEach(in: store, filter: filter) { entry in
            result.append(entry)
            return result.count < limit
        }
        return result
    }
}
