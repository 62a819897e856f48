import CumulusModel
import CumulusStorage
import Foundation

/// How the views environment follows the log: every write goes through
/// ``appendWrite(also:catchUp:_:)`` (the log's commit inside the views' transaction,
/// before the views commit), and views found behind the log are brought level by
/// ``catchUpViews(applying:progress:)`` through the same apply, from the frames the
/// log holds.
extension LogStore {
    /// Applies a commit to the views in a write transaction of the views environment.
    public typealias ViewApplier = (Commit, LMDBWriteTransaction) throws -> Void

    /// The applier of a log kept without views (its feeds and history are still
    /// caught up): applies nothing.
    public static func withoutViews(_ commit: Commit, _ txn: LMDBWriteTransaction) {}

    /// Commits caught up per transaction by ``catchUpViews(applying:progress:)``: as
    /// a rebuild's (the views are not flushed per transaction, so larger ones gain little).
    static let catchUpBatch = 5_000

    /// Runs `body` in a write transaction of the views environment and, after its last
    /// write, commits the outcome's frames to the log environment (with `also`'s
    /// writes) before the views transaction commits: the one order in which a crash
    /// leaves the views at or behind the log. Views found behind the log first catch
    /// up, by `catchUp`, inside the same transaction. If the views' commit fails after
    /// the log's (the map grew), the transaction runs again catching up instead of
    /// calling `body`: the result of the first run is returned, its commits durable.
    /// Publish the outcome with ``didCommit(_:)`` once this returns.
    public func appendWrite<T>(
        also: ((LMDBWriteTransaction) throws -> Void)? = nil, catchUp apply: ViewApplier,
        _ body: (LMDBWriteTransaction) throws -> (T, AppendSession.Outcome)
    ) throws -> (T, AppendSession.Outcome) {
        var committed: (T, AppendSession.Outcome)?
        return try environment.write { txn in
            _ = try catchUp(in: txn, limit: .max, apply)
            if let committed { return committed }
            let result = try body(txn)
            try txn.writeAllDeferred()
            try commitLog(result.1, also: also)
            committed = result
            return result
        }
    }

    /// Brings the views level with the log, applying each commit they miss with
    /// `apply` in transactions of ``catchUpBatch`` commits, each batch read and decoded
    /// on another thread while the one before is applied; `progress` hears the last
    /// sequence of each. Returns how many commits were applied. Views missing commits
    /// that retention dropped cannot catch up: that throws ``LogError/truncated(sequence:firstRetained:)``.
    @discardableResult
    public func catchUpViews(applying apply: ViewApplier, progress: ((UInt64) -> Void)? = nil) throws -> Int {
        try catchUpViews(prepare: { _ in () }, applying: { commit, _, _, txn in try apply(commit, txn) }, progress: progress)
    }

    /// ``catchUpViews(applying:progress:)`` with work done ahead: each batch is given
    /// to `prepare` on the other thread as it is read (the views derive what needs no
    /// transaction, as a replay does), and `apply` gets each commit with its index in
    /// the batch and what `prepare` made of the batch. Commits made meanwhile are
    /// not awaited: the writer's first group catches them up (``appendWrite(also:catchUp:_:)``).
    @discardableResult
    public func catchUpViews<Prepared: Sendable>(
        prepare: @escaping @Sendable ([Commit]) throws -> Prepared,
        applying apply: (Commit, Int, Prepared, LMDBWriteTransaction) throws -> Void, progress: ((UInt64) -> Void)? = nil
    ) throws -> Int {
        let tables = self.tables
        let logHead = try logEnvironment.read { try Self.readHead(tables.meta, in: $0) }.sequence
        var total = 0
        func start(_ next: UInt64) -> BackgroundWork<(batch: [StoredCommit], prepared: Prepared)>? {
            guard next <= logHead else { return nil }
            return BackgroundWork { [self] in
                let batch = try storedCommits(from: next, limit: Self.catchUpBatch, through: logHead)
                return (batch, try prepare(batch.map(\.commit)))
            }
        }
        let first = try appliedHead().sequence + 1
        try BackgroundWork.pipeline(
            first: start(first), next: { work in work.batch.last.flatMap { start($0.commit.sequence + 1) } }
        ) { batch, prepared in
            try environment.write { txn in
                var index = 0
                try self.index(batch, in: txn) { commit, txn in
                    defer { index += 1 }
                    try apply(commit, index, prepared, txn)
                }
            }
            total += batch.count
            if let last = batch.last { progress?(last.commit.sequence) }
        }
        return total
    }

    /// A commit the log holds, with its frame's chain hash.
    typealias StoredCommit = (commit: Commit, chainHash: [UInt8], previousHash: [UInt8])

    /// Up to `limit` stored commits from `from` through `through`, decoded; at least one
    /// unless the range is empty.
    func storedCommits(from: UInt64, limit: Int, through: UInt64) throws -> [StoredCommit] {
        var batch: [StoredCommit] = []
        guard from <= through else { return batch }
        try commitViewsWithHashes(from: from, through: through) { view, hash, previous in
            batch.append((try view.commit(), hash, previous))
            return batch.count < limit
        }
        guard !batch.isEmpty else { throw LogError.missing(sequence: from) }
        return batch
    }

    /// Applies, in `txn`, up to `limit` of the commits the log holds after the views'
    /// applied head; returns how many.
    func catchUp(in txn: LMDBWriteTransaction, limit: Int, _ apply: ViewApplier) throws -> Int {
        let tables = self.tables
        let applied = try appliedHead(in: txn)
        let logHead = try logEnvironment.read { try Self.readHead(tables.meta, in: $0) }
        guard applied.sequence < logHead.sequence else {
            guard applied == logHead else {
                throw LogError.storage(
                    "the views have applied commit \(applied.sequence), past the log's head \(logHead.sequence): they belong to another log")
            }
            return 0
        }
        let batch = try storedCommits(from: applied.sequence + 1, limit: limit, through: logHead.sequence)
        try index(batch, in: txn, apply)
        return batch.count
    }

    /// Indexes `batch` (feeds, history, the applied head) and applies each commit to
    /// the views in `txn`, after the views' applied head: the one loop of catching up.
    private func index(_ batch: [StoredCommit], in txn: LMDBWriteTransaction, _ apply: ViewApplier) throws {
        var session = AppendSession(store: self, head: try appliedHead(in: txn), current: nil, indexOnly: true)
        for (commit, hash, previous) in batch {
            try session.index(commit, chainHash: hash, following: previous, in: txn)
            try apply(commit, txn)
        }
        _ = try session.finish(in: txn)
    }

    /// Writes a consistent pair of copies of the two environments into the data
    /// directory `destination` (which must hold neither): the views first, then the
    /// log, so the copy's log holds every commit its views applied; with no writer
    /// running (a replay), both are at the same commit.
    public func copyEnvironments(to destination: String, compact: Bool = false) throws {
        try environment.copy(to: destination, compact: compact)
        try logEnvironment.copy(to: DataLayout.logPath(destination), compact: compact)
    }

    // MARK: - Opening and views syncs

    /// What ``open(path:options:)`` found.
    public enum OpenedViews: Sendable, Hashable {
        /// The views environment was opened as it was.
        case kept
        /// It was torn by a crash of the machine (``ViewsDurability``): it was deleted
        /// unopened, and the views start empty, to be caught up from the log.
        case remade
        /// It was torn, deleted unopened, and replaced by the last views snapshot
        /// (``ViewsSnapshot``), which holds the views through commit `sequence`: the
        /// rest is caught up from the log.
        case restored(sequence: UInt64)
    }

    /// Opens the data directory at `path` as a server does: the log environment first,
    /// then — unless its record says the views may be torn, in which case their files
    /// are deleted without ever being opened — the views environment. Views deleted
    /// so are replaced by the last views snapshot (``ViewsSnapshot``) if one was
    /// taken, and otherwise start empty; either way ``catchUpViews(applying:progress:)``
    /// makes the rest from the log. A log truncated by retention past the snapshot (or
    /// with none) cannot: that is refused, naming the ways out. Returns the store and
    /// what happened to the views.
    public static func open(path: String, options: LMDBEnvironment.Options = .init()) throws -> (LogStore, OpenedViews) {
        let log = try LMDBEnvironment(path: DataLayout.logPath(path), options: options)
        var opened = OpenedViews.kept
        if !options.readOnly {
            let meta = try DataLayout.open(.meta, in: log)
            let (record, head, base, snapshot) = try log.read { txn in
                (try ViewsDurability.record(in: txn, meta: meta), try readHead(meta, in: txn),
                 try readRetainedBase(meta, in: txn), try ViewsSnapshot.record(in: txn, meta: meta, ofData: path))
            }
            if ViewsDurability.verdict(record: record, boot: ViewsDurability.currentBoot, logHead: head.sequence) == .torn {
                // The log must still hold every commit after where the views restart.
                let restart = snapshot?.sequence ?? 0
                guard restart >= base.sequence else {
                    throw LogError.viewsTorn(
                        "the views in \(path) may have been torn by a crash of the machine, and the log starts at commit "
                            + "\(base.sequence + 1) (retention), after "
                            + (snapshot.map { "its last views snapshot (commit \($0.sequence))" } ?? "the first commit")
                            + ", so they cannot be made again from it: restore the directory from a backup, or, on a "
                            + "follower, start it with --reseed")
                }
                for file in ["data.mdb", "lock.mdb"] {
                    let file = (path.hasSuffix("/") ? path : path + "/") + file
                    if FileManager.default.fileExists(atPath: file) { try FileManager.default.removeItem(atPath: file) }
                }
                if let snapshot {
                    try ViewsSnapshot.restore(snapshot, intoData: path)
                    opened = .restored(sequence: snapshot.sequence)
                } else {
                    opened = .remade
                }
            }
        }
        let views = try LMDBEnvironment(path: path, options: options)
        let store = try LogStore(logEnvironment: log, viewsEnvironment: views)
        if case .restored(let sequence) = opened, try store.appliedHead().sequence != sequence {
            throw LogError.viewsTorn(
                "the views snapshot of \(path) recorded at commit \(sequence) holds commit "
                    + "\(try store.appliedHead().sequence): remove views-snapshots/ and restore the directory from a backup")
        }
        return (store, opened)
    }

    /// The log ID and head sequence of the data directory at `path`, read from its log
    /// environment alone, read-only: for a look at a directory before it is opened,
    /// whose views may be torn and must not be opened (``open(path:options:)``).
    public static func logIdentity(ofDataDirectory path: String) throws -> (logID: [UInt8], head: UInt64) {
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        let log = try LMDBEnvironment(path: DataLayout.logPath(path), options: options)
        let meta = try DataLayout.open(.meta, in: log)
        return try log.read { txn in
            guard let logID = try txn.get(meta, key: metaLogID) else {
                throw LogError.storage("\(path) holds no Cumulus log")
            }
            return (logID, try readHead(meta, in: txn).sequence)
        }
    }

    /// A views sync: flushes the views environment, then records in the log
    /// environment, durable, the applied sequence that flush covers, this boot, and
    /// whether the node is `closing` (no writes follow). Returns the sequence covered.
    @discardableResult
    public func syncViews(closing: Bool = false) throws -> UInt64 {
        // Read before the flush: what the flush writes covers at least this much.
        let applied = try appliedHead().sequence
        try environment.sync(force: true)
        let record = ViewsDurability.Record(boot: ViewsDurability.currentBoot, clean: closing, synced: applied)
        let meta = tables.meta
        try logEnvironment.write { txn in try txn.put(meta, key: ViewsDurability.metaKey, value: record.bytes) }
        return applied
    }

    /// The record of the last views sync, if any.
    public func viewsRecord() throws -> ViewsDurability.Record? {
        let meta = tables.meta
        return try logEnvironment.read { try ViewsDurability.record(in: $0, meta: meta) }
    }
}
