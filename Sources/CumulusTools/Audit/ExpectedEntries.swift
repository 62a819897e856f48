import CumulusLog

/// The entries an export should hold, regenerated from the log in batches of
/// commits, with lookahead (constant memory, like the export itself).
struct ExpectedEntries {
    static let batch: UInt64 = 1_000
    let store: LogStore
    let filter: LogFilter
    private var next: UInt64
    private var done = false
    private var buffered: [LogEntry] = []
    private var start = 0

    init(store: LogStore, filter: LogFilter) {
        self.store = store
        self.filter = filter
        next = max(filter.from, 1)
        done = next > filter.through
    }

    mutating func peek(_ offset: Int = 0) throws -> LogEntry? {
        while buffered.count - start <= offset, !done {
            if start > 0 {
                buffered.removeFirst(start)
                start = 0
            }
            var range = filter
            range.from = next
            range.through = min(filter.through, next + Self.batch - 1)
            let last = try LogBrowser.forEach(in: store, filter: range) { entry in
                buffered.append(entry)
                return true
            }
            // The log ended before `through`, or the range is done: nothing more will come.
            if last < range.through || range.through >= filter.through {
                done = true
            } else {
                next = range.through + 1
            }
        }
        return start + offset < buffered.count ? buffered[start + offset] : nil
    }

    mutating func advance() {
        if start < buffered.count { start += 1 }
    }
}
