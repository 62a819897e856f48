import CumulusLog
import CumulusModel

/// `audit export`: every event in a range, one line each (``EntryFormatter/columns``),
/// after a header line (``AuditHeader``). Streams: one commit in memory at a time,
/// lines buffered into the output in chunks. Field values never appear — only key
/// names — so encrypted values cannot leak.
public enum AuditExporter {
    /// What an export wrote.
    public struct Summary: Sendable, Hashable {
        /// The header written (its filter holds the resolved range).
        public var header: AuditHeader
        /// Event lines written.
        public var events: Int
    }

    /// Writes the events passing `filter` from `store` to `output`. An open-ended
    /// range is closed at the head as of the start, and the header says so.
    /// `progress` gets each sequence read.
    @discardableResult
    public static func export(
        _ store: LogStore, format: AuditFormat, filter: LogFilter, to output: LineWriter,
        progress: ((UInt64) throws -> Void)? = nil
    ) throws -> Summary {
        var resolved = filter
        resolved.through = min(filter.through, try store.lastSequence())
        let header = AuditHeader(logID: Hex.encode(store.logID), filter: resolved)
        try output.write(header.line(format))
        if format == .csv { try output.write(CSV.row(EntryFormatter.columns)) }
        var events = 0
        var renderer = LineRenderer()
        try LogBrowser.forEach(in: store, filter: resolved, progress: progress) { entry in
            try output.writeLine { bytes in
                if format == .jsonl { renderer.json(entry, into: &bytes) } else { renderer.csv(entry, into: &bytes) }
            }
            events += 1
            return true
        }
        try output.flush()
        return Summary(header: header, events: events)
    }
}
