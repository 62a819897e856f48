import CumulusLog
import CumulusModel
import CumulusTools
import Foundation
import Synchronization

/// The console's live log (`GET /console/api/log/stream`, operators): server-sent events,
/// one per event of each commit, each the JSON line an audit export holds for it
/// (``EntryFormatter/json(_:)``, made by ``LogBrowser`` as `cumulus log` makes its lines),
/// filtered as `cumulus log` filters: `database`, `zone`, `record`, `user`, `type`.
///
/// It starts ``consoleLogBacklog`` commits before the head (or after `Last-Event-ID`, or
/// `after`), then follows new commits as they are made. A commit's last event carries
/// its sequence as the event's `id`, so a browser that reconnects resumes after the last
/// whole commit it saw. A stream checks its session at each wake and ends with it, ends
/// after ``APILimits/notificationStreamLifetime``, and at most
/// ``ConsoleSessions/maxLogStreams`` are open on a node.
extension CloudKitAPI {
    /// Commits shown before the head when a stream starts without a position.
    static let consoleLogBacklog: UInt64 = 50
    /// Commits read per wake: a stream far behind catches up in steps.
    static let consoleLogBatch: UInt64 = 100

    /// The live log stream for `request`, whose session must be an operator's.
    public func consoleLogEvents(_ request: APIRequest) throws -> AsyncThrowingStream<String, Error> {
        guard let sessions = consoleSessions else {
            throw ConsoleRefusal(code: .notFound, reason: "this node does not serve the console; start it with --console (or --dev)")
        }
        let (token, _) = try consoleOperator(request, sessions)
        let filter = LogFilter(
            scope: ScopeMatcher(database: request.query["database"].nonEmpty, zone: request.query["zone"].nonEmpty),
            recordName: request.query["record"].nonEmpty, user: request.query["user"].nonEmpty,
            recordType: request.query["type"].nonEmpty)
        let store = container.store
        let head = store.head.sequence
        let resume = (request.headers["last-event-id"] ?? request.query["after"]).flatMap { UInt64($0) }
        let start = resume.map { $0 + 1 } ?? (head > Self.consoleLogBacklog ? head - Self.consoleLogBacklog + 1 : 1)
        guard let slot = sessions.openLogStream() else {
            throw ConsoleRefusal(
                code: .tryAgainLater, reason: "\(ConsoleSessions.maxLogStreams) console log streams are open on this node; close one")
        }
        let heartbeat = notificationHeartbeat
        let ends = ContinuousClock.now + limits.notificationStreamLifetime
        // A greeting first: the browser learns at once that the stream is open, before
        // any commit is there to send.
        let state = Mutex(LogTail(next: max(start, store.firstRetained), lines: [": cumulus log from commit \(start)\n\n"]))
        return AsyncThrowingStream(unfolding: {
            // The slot lives as long as this closure, which lives as long as the stream.
            _ = slot
            while true {
                if let line = state.withLock({ $0.lines.popFirst() }) { return line }
                guard ContinuousClock.now < ends, sessions.session(token) != nil else { return nil }
                let next = state.withLock { $0.next }
                let head = store.head.sequence
                if head >= next {
                    let through = min(head, next + Self.consoleLogBatch - 1)
                    let lines = try Self.logLines(store, filter, from: next, through: through)
                    state.withLock {
                        $0.lines.append(contentsOf: lines)
                        $0.next = through + 1
                    }
                    continue
                }
                let arrived = await store.waitForCommit(after: next - 1, until: min(ends, .now + heartbeat))
                // A comment line: how a dropped connection is found on an idle stream.
                if !arrived { return ": keep-alive\n\n" }
            }
        })
    }

    /// Where a live log stands: the next commit to read, and the events read but not sent.
    private struct LogTail {
        var next: UInt64
        var lines: ArraySlice<String> = []
    }

    /// The events of commits `from` through `through` that pass `filter`, as SSE events;
    /// the last event of each commit carries its sequence as `id`.
    static func logLines(_ store: LogStore, _ filter: LogFilter, from: UInt64, through: UInt64) throws -> [String] {
        var range = filter
        range.from = from
        range.through = through
        var entries: [LogEntry] = []
        try LogBrowser.forEach(in: store, filter: range) { entry in
            entries.append(entry)
            return true
        }
        return entries.enumerated().map { index, entry in
            let lastOfCommit = index + 1 == entries.count || entries[index + 1].sequence != entry.sequence
            let id = lastOfCommit ? "id: \(entry.sequence)\n" : ""
            return "\(id)event: entry\ndata: \(EntryFormatter.json(entry))\n\n"
        }
    }

    /// The session of `request` if it is an operator's (``ConsoleRefusal`` otherwise). A
    /// request that changes something (any method but GET) must carry the session's
    /// CSRF token too.
    func consoleOperator(_ request: APIRequest, _ sessions: ConsoleSessions) throws
        -> (token: String, session: ConsoleSessions.Session)
    {
        let (token, session) = try consoleSession(request, sessions, writing: request.method != "GET")
        guard session.isOperator else {
            throw ConsoleRefusal(code: .accessDenied, reason: "the node's pages are for operators; \(session.user) is not one")
        }
        return (token, session)
    }
}

extension Optional where Wrapped == String {
    /// The string, or `nil` when it is absent or empty (an empty filter field).
    var nonEmpty: String? {
        guard let self, !self.isEmpty else { return nil }
        return self
    }
}
