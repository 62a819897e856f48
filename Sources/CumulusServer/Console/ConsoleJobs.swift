import CumulusModel
import CumulusStorage
import Foundation
import Synchronization

/// The console's long work (a chain verify, an audit export, a past state for "as of", a
/// diff): each a job that runs on a thread of its own, one at a time (each reads the whole
/// log or writes a copy of it; two at once would only halve each), reports how far it
/// has come, and stops when cancelled. Pages poll a job's ``Status``; an export's file is
/// downloaded from it once done.
///
/// Jobs live in the node's memory: the newest ``kept`` are remembered, and a restart
/// forgets them. Their files go to `DATA/console-jobs/`, emptied when the node starts and
/// as jobs are forgotten.
public final class ConsoleJobs: Sendable {
    /// Where a job is.
    public enum State: String, Sendable {
        case queued, running, done, failed, cancelled
    }

    /// A job as a page sees it.
    public struct Status: Sendable {
        /// Its ID, random.
        public var id: String
        /// What it does (`verify`, `audit`, `as-of`, `diff`).
        public var kind: String
        /// A sentence naming it ("verify the chain from 1 through 2,000").
        public var label: String
        /// The operator who started it.
        public var owner: String
        /// When it was started, and when it ended.
        public var started: Date
        /// When it ended; `nil` while it runs.
        public var finished: Date?
        /// Where it is.
        public var state: State
        /// How far it has come, of ``total`` (0: unknown).
        public var done: UInt64
        /// How much it has to do (0: unknown).
        public var total: UInt64
        /// What it found, once done.
        public var result: JSONValue?
        /// Why it failed.
        public var error: String?
        /// The name a download of its file is offered under, once done.
        public var fileName: String?
    }

    /// What a job's work is handed: where to report progress (a report after a cancel
    /// throws, which ends the work), and the file it may write for a download.
    public struct Work: Sendable {
        /// Reports progress; throws `CancellationError` once the job was cancelled.
        public let report: @Sendable (UInt64) throws -> Void
        /// The path of the job's file (not yet created).
        public let file: String
    }

    private struct Entry: Sendable {
        var status: Status
        var cancelled = false
        var file: String
    }

    /// Most jobs remembered.
    public static let kept = 20
    /// Where jobs' files go.
    let directory: String
    private let entries = Mutex<[String: Entry]>([:])
    /// Where jobs run, one at a time, off both of the process's shared pools.
    private let worker = SerialThread(name: "cumulus.console.jobs")

    /// Jobs for the data directory at `dataPath`, with its files' folder emptied.
    public init(dataPath: String) {
        directory = dataPath + "/console-jobs"
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Queues `work` and returns its status. `work` returns the job's result; a file it
    /// wrote to ``Work/file`` is offered for download as `fileName`.
    public func start(
        kind: String, label: String, owner: String, total: UInt64 = 0, fileName: String? = nil,
        _ work: @escaping @Sendable (Work) throws -> JSONValue
    ) -> Status {
        let id = AuthStore.randomHex(8)
        let file = directory + "/" + id
        let status = Status(
            id: id, kind: kind, label: label, owner: owner, started: Date(), finished: nil, state: .queued, done: 0,
            total: total, result: nil, error: nil, fileName: nil)
        let forgotten = entries.withLock { entries -> [String] in
            entries[id] = Entry(status: status, file: file)
            return forget(&entries)
        }
        for path in forgotten { try? FileManager.default.removeItem(atPath: path) }
        worker.submit { [self] in run(id, file: file, fileName: fileName, work) }
        return status
    }

    private func run(_ id: String, file: String, fileName: String?, _ work: @Sendable (Work) throws -> JSONValue) {
        let go = entries.withLock { entries -> Bool in
            guard entries[id]?.cancelled == false else { return false }
            entries[id]?.status.state = .running
            return true
        }
        guard go else { return finish(id, .cancelled) }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let report: @Sendable (UInt64) throws -> Void = { [self] done in
            let cancelled = entries.withLock { entries in
                entries[id]?.status.done = done
                return entries[id]?.cancelled ?? true
            }
            if cancelled { throw CancellationError() }
        }
        do {
            let result = try work(Work(report: report, file: file))
            let hasFile = fileName != nil && FileManager.default.fileExists(atPath: file)
            finish(id, .done, result: result, fileName: hasFile ? fileName : nil)
        } catch is CancellationError {
            try? FileManager.default.removeItem(atPath: file)
            finish(id, .cancelled)
        } catch {
            try? FileManager.default.removeItem(atPath: file)
            finish(id, .failed, error: (error as? CumulusError)?.message ?? "\(error)")
        }
    }

    private func finish(
        _ id: String, _ state: State, result: JSONValue? = nil, error: String? = nil, fileName: String? = nil
    ) {
        let forgotten = entries.withLock { entries -> [String] in
            entries[id]?.status.state = state
            entries[id]?.status.finished = Date()
            entries[id]?.status.result = result
            entries[id]?.status.error = error
            entries[id]?.status.fileName = fileName
            return forget(&entries)
        }
        for path in forgotten { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Drops the oldest finished jobs while more than ``kept`` are remembered (a job
    /// still queued or running is never dropped); returns their files' paths.
    private func forget(_ entries: inout [String: Entry]) -> [String] {
        let surplus = entries.count - Self.kept
        guard surplus > 0 else { return [] }
        let finished = entries.values.filter { $0.status.finished != nil }.sorted { $0.status.started < $1.status.started }
        let dropped = finished.prefix(surplus).map(\.status.id)
        for id in dropped { entries[id] = nil }
        return dropped.map { directory + "/" + $0 }
    }

    /// The job `id`, if remembered.
    public func status(_ id: String) -> Status? { entries.withLock { $0[id]?.status } }

    /// Every job remembered, newest first.
    public func all() -> [Status] {
        entries.withLock { $0.values.map(\.status) }.sorted { $0.started > $1.started }
    }

    /// Cancels job `id`: a queued one never starts, a running one stops at its next
    /// report. Whether there was such a job still to stop.
    @discardableResult
    public func cancel(_ id: String) -> Bool {
        entries.withLock { entries in
            guard let entry = entries[id], entry.status.finished == nil else { return false }
            entries[id]?.cancelled = true
            return true
        }
    }

    /// The file of a finished job offered for download: its path and name.
    public func download(_ id: String) -> (path: String, name: String)? {
        entries.withLock { entries in
            guard let entry = entries[id], entry.status.state == .done, let name = entry.status.fileName else { return nil }
            return (entry.file, name)
        }
    }
}
