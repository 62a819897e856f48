import Crypto
import CumulusModel
import CumulusStorage
import Foundation
import Synchronization

/// The log: the source of truth of a Cumulus data directory (`Docs/ARCHITECTURE.md`).
///
/// Commits are stored as frames (``Frame``) under their global sequence in the
/// `log` table of the **log environment** (``logEnvironment``, `DATA/log/`), each
/// chained to its predecessor by SHA-256, compressed with zstd (with a trained
/// dictionary once the log has one). The zone and database feed indexes and the
/// record history derived from them live in the **views environment**
/// (``environment``, `DATA/`) beside the views, with the sequence the views have
/// applied (``appliedHead``): the log environment is fsynced on every commit group,
/// the views environment never is (``DataLayout``).
///
/// **Writing** happens inside a caller's write transaction of the views environment,
/// through an ``AppendSession`` (``beginAppend(in:)``), so views are updated in the
/// very transaction that indexes the commit; the session holds the frames back, and
/// ``commitLog(_:also:)`` writes them to the log environment and makes them durable
/// before that views transaction commits. So a crash leaves the views at or behind
/// the log, never ahead, and ``catchUpViews(applying:progress:)`` brings them level.
/// After both have committed, the caller passes the session's outcome to
/// ``didCommit(_:)`` so readers waiting in ``tail(from:)`` wake up: a reader woken
/// for a sequence finds it in the views too. ``LogWriter`` does all of this with
/// group commit; use it rather than appending by hand.
///
/// **Reading** (``read(_:)``, ``commits(from:through:_:)``, ``tail(from:)``,
/// ``verifyChain(from:through:progress:)``) takes its own read transactions and may
/// run on any thread, concurrently with the writer.
public final class LogStore: Sendable {
    /// The views environment: the feeds, the record history and the views, which
    /// readers take their snapshots of. Committed without fsync (``DataLayout``).
    public let environment: LMDBEnvironment
    /// The log environment: frames, the head, epochs, dictionaries, configuration and
    /// node state. Durable on every commit.
    public let logEnvironment: LMDBEnvironment
    /// A random ID fixed when the log was created: tokens and followers use it to
    /// tell this log from any other.
    public let logID: [UInt8]
    /// Whether the views were empty when this store opened writable (new, or made
    /// again after a crash of the machine): the one place that is decided. Views made
    /// afresh are built by this build's apply from the first commit, so they need no
    /// layout upgrade and no history backfill.
    public let viewsMadeAfresh: Bool

    let tables: Tables
    /// The per-record version index (`nil`: a read-only open of a log that predates it).
    let history: HistoryIndex?
    let feeds: FeedIndex
    let state: Mutex<State>
    private let decompressors = Mutex<[ZstdDecompressor]>([])

    struct Tables: Sendable {
        /// In the log environment.
        let log: LMDBTable
        let meta: LMDBTable
        let dictionaries: LMDBTable
        /// In the views environment.
        let viewsState: LMDBTable
    }

    struct State: Sendable {
        var head: LogHead
        /// The position before the first retained commit (``LogStore/retainedBase``).
        var retainedBase: LogHead = .empty
        var epoch: UInt64
        var dictionaries: [UInt32: ZstdDictionary]
        var current: CurrentDictionary?
        var waiters: [UInt64: (after: UInt64, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// The dictionary new frames are compressed with.
    struct CurrentDictionary: Sendable {
        let id: UInt32
        let compressor: ZstdCompressor
    }

    static let metaLogID: [UInt8] = Array("logID".utf8)
    static let metaEpoch: [UInt8] = Array("epoch".utf8)
    static let metaHead: [UInt8] = Array("head".utf8)
    static let metaFormat: [UInt8] = Array("format".utf8)
    /// `viewsState` key: the last commit the views applied (u64 sequence ‖ chain hash).
    static let viewsApplied: [UInt8] = Array("applied".utf8)
    /// The storage layout version written to `meta`: 2 since the log and the views
    /// have an environment each (1: one environment; upgraded on open).
    public static let storageFormat: UInt8 = 2

    /// Compressor for frames before the log has a dictionary.
    let plainCompressor: ZstdCompressor

    /// Opens the log of the data directory whose views environment is `environment`:
    /// the log environment is opened at `DATA/log/` with the same options. See
    /// ``init(logEnvironment:viewsEnvironment:)``.
    public convenience init(environment: LMDBEnvironment) throws {
        try self.init(logEnvironment: DataLayout.openLogEnvironment(of: environment), viewsEnvironment: environment)
    }

    /// Opens the log in `logEnvironment` with its derived indexes in `viewsEnvironment`,
    /// creating tables and identity on first use; from now on the views environment's
    /// commits do not flush. A data directory of the one-environment layout (format 1)
    /// is upgraded first: its log tables are copied into the log environment.
    ///
    /// The views may be behind the log afterwards (a crash between the two commits, a
    /// views environment made afresh): whoever applies views calls
    /// ``catchUpViews(applying:progress:)`` before anything reads them.
    public init(logEnvironment: LMDBEnvironment, viewsEnvironment environment: LMDBEnvironment) throws {
        self.environment = environment
        self.logEnvironment = logEnvironment
        if !logEnvironment.options.readOnly {
            try LayoutUpgrade.upgradeIfNeeded(log: logEnvironment, views: environment)
        }
        tables = Tables(
            log: try DataLayout.open(.log, in: logEnvironment),
            meta: try DataLayout.open(.meta, in: logEnvironment),
            dictionaries: try DataLayout.open(.dictionaries, in: logEnvironment),
            viewsState: try DataLayout.open(.viewsState, in: environment))
        feeds = FeedIndex(
            zoneFeed: try DataLayout.open(.zoneFeed, in: environment),
            zoneHeads: try DataLayout.open(.zoneHeads, in: environment),
            databaseFeed: try DataLayout.open(.databaseFeed, in: environment),
            databaseHeads: try DataLayout.open(.databaseHeads, in: environment))
        history = try HistoryIndex.open(in: environment, meta: tables.viewsState)
        if !environment.options.readOnly { try environment.setSyncOnCommit(false) }
        plainCompressor = try ZstdCompressor(level: ZstdCompressor.defaultLevel, dictionary: nil, includeDictionaryID: false)
        let tables = self.tables
        let identity = { (txn: LMDBReadTransaction) throws -> ([UInt8], UInt64, LogHead)? in
            if let format = try txn.get(tables.meta, key: Self.metaFormat), format != [Self.storageFormat] {
                throw LogError.storage("data directory has storage format \(format), this build reads \(Self.storageFormat)")
            }
            guard let logID = try txn.get(tables.meta, key: Self.metaLogID) else { return nil }
            let epoch = try txn.get(tables.meta, key: Self.metaEpoch).flatMap { BigEndian.decode(UInt64.self, from: $0) } ?? 1
            return (logID, epoch, try Self.readHead(tables.meta, in: txn))
        }
        let found: ([UInt8], UInt64, LogHead)
        if logEnvironment.options.readOnly {
            guard let existing = try logEnvironment.read(identity) else {
                throw LogError.storage("\(environment.path) holds no Cumulus log")
            }
            found = existing
        } else {
            found = try logEnvironment.write { txn in
                if let existing = try identity(txn) { return existing }
                // A new log: a random identity, format and epoch, fixed from now on.
                var random = SystemRandomNumberGenerator()
                let logID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
                try txn.put(tables.meta, key: Self.metaLogID, value: logID)
                try txn.put(tables.meta, key: Self.metaFormat, value: [Self.storageFormat])
                try txn.put(tables.meta, key: Self.metaEpoch, value: BigEndian.bytes(UInt64(1)))
                return (logID, 1, LogHead.empty)
            }
        }
        let (logID, epoch, head) = found
        self.logID = logID
        var dictionaries: [UInt32: ZstdDictionary] = [:]
        try logEnvironment.read { txn in
            try txn.scan(tables.dictionaries) { key, value in
                guard let id = BigEndian.decode(UInt32.self, from: key) else {
                    throw LogError.storage("malformed dictionary key")
                }
                dictionaries[id] = try ZstdDictionary(bytes: Array(value))
                return true
            }
        }
        var current: CurrentDictionary?
        if let newest = dictionaries.keys.max(), let dictionary = dictionaries[newest] {
            current = CurrentDictionary(id: newest, compressor: try Self.compressor(for: dictionary))
        }
        let retainedBase = try logEnvironment.read { try Self.readRetainedBase(tables.meta, in: $0) }
        viewsMadeAfresh = try !environment.options.readOnly
            && environment.read { try Self.readAppliedHead(tables.viewsState, in: $0) } == .empty
        state = Mutex(State(head: head, retainedBase: retainedBase, epoch: epoch, dictionaries: dictionaries, current: current))
        if viewsMadeAfresh, retainedBase == .empty {
            // Catching up indexes every commit's history: no backfill needed.
            try history?.markComplete(in: environment)
        }
        try history?.backfillIfNeeded(self)
    }

    static func compressor(for dictionary: ZstdDictionary) throws -> ZstdCompressor {
        try ZstdCompressor(level: dictionary.compressionLevel, dictionary: dictionary, includeDictionaryID: false)
    }

    static func readHead(_ meta: LMDBTable, in txn: LMDBReadTransaction) throws -> LogHead {
        guard let bytes = try txn.get(meta, key: metaHead) else { return .empty }
        guard bytes.count == 8 + Frame.hashLength, let sequence = BigEndian.decode(UInt64.self, from: bytes) else {
            throw LogError.storage("malformed log head in meta")
        }
        return LogHead(sequence: sequence, hash: Array(bytes[8...]))
    }

    // MARK: - Position

    /// The last commit durable in this process's view (updated by ``didCommit(_:)``).
    public var head: LogHead { state.withLock { $0.head } }

    /// The last sequence, read from storage (sees other processes' commits too).
    public func lastSequence() throws -> UInt64 {
        try logEnvironment.read { try Self.readHead(tables.meta, in: $0).sequence }
    }

    /// The last commit the views (and the feeds and history beside them) have applied,
    /// read from storage: at or behind the log's head, level with it once caught up.
    public func appliedHead() throws -> LogHead {
        try environment.read { try appliedHead(in: $0) }
    }

    /// ``appliedHead()`` as `txn`, a transaction of the views environment, sees it.
    public func appliedHead(in txn: LMDBReadTransaction) throws -> LogHead {
        try Self.readAppliedHead(tables.viewsState, in: txn)
    }

    /// The applied head a views environment's `viewsState` holds, as `txn` sees it:
    /// this store's, or a copy's (``takeViewsSnapshot()``).
    static func readAppliedHead(_ viewsState: LMDBTable, in txn: LMDBReadTransaction) throws -> LogHead {
        guard let bytes = try txn.get(viewsState, key: Self.viewsApplied) else { return .empty }
        guard bytes.count == 8 + Frame.hashLength, let sequence = BigEndian.decode(UInt64.self, from: bytes) else {
            throw LogError.storage("malformed applied head in viewsState")
        }
        return LogHead(sequence: sequence, hash: Array(bytes[8...]))
    }

    /// The leader epoch stored with the log; followers and tokens compare it.
    public var epoch: UInt64 { state.withLock { $0.epoch } }

    /// The ID of the dictionary new frames are compressed with, if any.
    public var currentDictionaryID: UInt32? { state.withLock { $0.current?.id } }

    // MARK: - Appending

    /// Starts appending in `txn`, a write transaction of the views environment, after
    /// the commit the views have applied: inside ``appendWrite(also:catchUp:_:)``, which
    /// has brought them level with the log's head, and commits the outcome's frames
    /// with ``commitLog(_:also:)`` before `txn`. (Appended after views that were not
    /// level, the frames would not continue the log: its commit refuses them.)
    public func beginAppend(in txn: LMDBWriteTransaction) throws -> AppendSession {
        AppendSession(store: self, head: try appliedHead(in: txn), current: state.withLock { $0.current })
    }

    /// Writes a finished session's frames, dictionaries, epoch starts and head to the
    /// log environment in one transaction (with `also`'s writes) and commits it: once
    /// this returns, the commits are durable. Call it inside the views transaction the
    /// session indexed them in, after that transaction's last write
    /// (`writeAllDeferred()`), so the views commit only after the log has.
    public func commitLog(_ outcome: AppendSession.Outcome, also: ((LMDBWriteTransaction) throws -> Void)? = nil) throws {
        let tables = self.tables
        try logEnvironment.write { txn in
            for frame in outcome.frames {
                let stored = try txn.put(
                    tables.log, key: BigEndian.bytes(frame.sequence), value: frame.bytes, flags: [.noOverwrite, .append])
                guard stored else {
                    throw LogError.doesNotContinue(expected: frame.sequence, got: frame.sequence, reason: "sequence taken")
                }
            }
            for item in outcome.installed {
                let key = BigEndian.bytes(item.id)
                if let existing = try txn.get(tables.dictionaries, key: key) {
                    guard existing == item.bytes else {
                        throw LogError.corruptFrame(sequence: item.sequence, reason: "dictionary \(item.id) installed twice")
                    }
                } else {
                    try txn.put(tables.dictionaries, key: key, value: item.bytes)
                }
            }
            for start in outcome.epochStarts { try recordEpochStart(start.epoch, at: start.sequence, in: txn) }
            if !outcome.frames.isEmpty {
                try txn.put(tables.meta, key: Self.metaHead, value: BigEndian.bytes(outcome.head.sequence) + outcome.head.hash)
            }
            try also?(txn)
        }
    }

    /// Publishes a committed session: advances ``head``, switches to dictionaries it
    /// installed, and wakes readers waiting for new commits. Call only after the
    /// transaction that held the session has committed.
    public func didCommit(_ outcome: AppendSession.Outcome) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard outcome.head.sequence > state.head.sequence else { return [] }
            state.head = outcome.head
            for item in outcome.installed {
                state.dictionaries[item.id] = item.dictionary
                state.current = CurrentDictionary(id: item.id, compressor: item.compressor)
            }
            var ready: [CheckedContinuation<Void, Never>] = []
            for (key, waiter) in state.waiters where waiter.after < outcome.head.sequence {
                ready.append(waiter.continuation)
                state.waiters[key] = nil
            }
            return ready
        }
        for continuation in woken { continuation.resume() }
    }

    // MARK: - Reading

    /// The stored frame bytes of commit `sequence`, exactly as a follower receives
    /// them, or `nil` if there is none.
    public func frameBytes(_ sequence: UInt64) throws -> [UInt8]? {
        try logEnvironment.read { txn in try txn.get(tables.log, key: BigEndian.bytes(sequence)) }
    }

    /// Commit `sequence`, or `nil` if the log has none. A damaged frame throws
    /// ``LogError/corruptFrame(sequence:reason:)`` rather than returning garbage, and
    /// one dropped by retention ``LogError/truncated(sequence:firstRetained:)``.
    public func read(_ sequence: UInt64) throws -> Commit? {
        try logEnvironment.read { txn -> Commit? in
            let commit = try txn.withValue(tables.log, key: BigEndian.bytes(sequence)) { buffer in
                try decodeCommit(FrameView(parsing: buffer, expectedSequence: sequence))
            }
            if commit == nil { try checkRetained(sequence, in: txn) }
            return commit
        }
    }

    /// Calls `body` with each commit from `from` through `through` (inclusive) in
    /// order, until it returns `false`. Runs in one read snapshot.
    public func commits(from: UInt64, through: UInt64 = .max, _ body: (Commit) throws -> Bool) throws {
        try commitViews(from: from, through: through) { try body(try $0.commit()) }
    }

    /// Calls `body` with each commit from `from` through `through` (inclusive) in
    /// order, as a ``CommitView`` (its header parsed, its events decoded only if
    /// `body` asks), until it returns `false`. Runs in one read snapshot; each view
    /// is valid only during its call. A range starting before the first retained
    /// commit throws ``LogError/truncated(sequence:firstRetained:)`` before any call.
    public func commitViews(from: UInt64, through: UInt64 = .max, _ body: (CommitView) throws -> Bool) throws {
        guard from <= through else { return }
        let end: [UInt8]? = through == .max ? nil : BigEndian.bytes(through + 1)
        try logEnvironment.read { txn in
            try checkRetained(max(from, 1), in: txn)
            try txn.scan(tables.log, from: BigEndian.bytes(max(from, 1)), to: end) { key, value in
                guard let sequence = BigEndian.decode(UInt64.self, from: key) else {
                    throw LogError.storage("malformed log key")
                }
                return try withCommitView(try FrameView(parsing: value, expectedSequence: sequence), body)
            }
        }
    }

    /// Derives state from commits 1 through `through` in batches of `batchSize`: each
    /// batch is read in a read snapshot, then given to `apply` in one write
    /// transaction of `environment` (the log's own, or a scratch one), so a batch's
    /// writes share one commit and one fsync. The one loop of a view rebuild and of
    /// the history backfill. `progress` gets the last sequence of each batch.
    public func replayInBatches(
        through last: UInt64, batchSize: Int, into environment: LMDBEnvironment,
        progress: ((UInt64) -> Void)? = nil, _ apply: ([Commit], LMDBWriteTransaction) throws -> Void
    ) throws {
        try replayInBatches(
            through: last, batchSize: batchSize, into: environment, progress: progress, prepare: { _ in () }
        ) { batch, _, txn in try apply(batch, txn) }
    }

    /// ``replayInBatches(through:batchSize:into:progress:_:)`` with work done ahead:
    /// while batch *n* is written, batch *n* + 1 is read and given to `prepare` on
    /// another thread (deriving what needs no transaction), and `apply` gets both.
    public func replayInBatches<Prepared: Sendable>(
        through last: UInt64, batchSize: Int, into environment: LMDBEnvironment,
        progress: ((UInt64) -> Void)? = nil, prepare: @escaping @Sendable ([Commit]) throws -> Prepared,
        _ apply: ([Commit], Prepared, LMDBWriteTransaction) throws -> Void
    ) throws {
        let size = UInt64(max(batchSize, 1))
        func start(_ next: UInt64) -> BackgroundWork<(batch: [Commit], prepared: Prepared, end: UInt64)>? {
            guard next <= last else { return nil }
            return BackgroundWork { [self] in
                let batch = try range(from: next, through: min(last, next + size - 1))
                guard let end = batch.last?.sequence else { throw LogError.missing(sequence: next) }
                return (batch, try prepare(batch), end)
            }
        }
        try BackgroundWork.pipeline(first: start(1), next: { start($0.end + 1) }) { batch, prepared, end in
            try environment.write { txn in try apply(batch, prepared, txn) }
            progress?(end)
        }
    }

    /// Commits `from` through `through` (inclusive), at most `limit` of them.
    public func range(from: UInt64, through: UInt64 = .max, limit: Int = .max) throws -> [Commit] {
        var result: [Commit] = []
        guard limit > 0 else { return result }
        try commits(from: from, through: through) { commit in
            result.append(commit)
            return result.count < limit
        }
        return result
    }

    /// Commits from `sequence` on, forever: the sequence yields what is stored, then
    /// waits for new commits. Ends only when the consuming task is cancelled.
    public func tail(from sequence: UInt64) -> LogTail {
        LogTail(store: self, next: max(sequence, 1))
    }

    /// Suspends until a commit after `sequence` is published (or the task is cancelled).
    public func waitForCommit(after sequence: UInt64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.head.sequence > sequence || Task.isCancelled { return true }
                    state.waiters[id] = (sequence, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }

    /// Suspends until a commit after `sequence` is published or `deadline` passes;
    /// returns whether one was. The one bounded wait that long-polls, catch-up waits
    /// and replication heartbeats share.
    @discardableResult
    public func waitForCommit(after sequence: UInt64, until deadline: ContinuousClock.Instant) async -> Bool {
        if head.sequence > sequence { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForCommit(after: sequence) }
            group.addTask { try? await Task.sleep(until: deadline, clock: ContinuousClock()) }
            await group.next()
            group.cancelAll()
        }
        return head.sequence > sequence
    }

    /// The zone's feed after zone position `after` (0: from the start), at most `limit` entries.
    public func zoneFeed(_ database: DatabaseID, _ zone: ZoneID, after: UInt64, limit: Int = .max) throws
        -> [ZoneFeedEntry]
    {
        try environment.read { try feeds.zoneEntries(database, zone, after: after, limit: limit, in: $0) }
    }

    /// The database's feed after position `after` (0: from the start), at most `limit` entries.
    public func databaseFeed(_ database: DatabaseID, after: UInt64, limit: Int = .max) throws -> [DatabaseFeedEntry] {
        try environment.read { try feeds.databaseEntries(database, after: after, limit: limit, in: $0) }
    }

    /// The last position of a zone's feed, as `txn` sees it (0: never written).
    public func zoneHead(_ database: DatabaseID, _ zone: ZoneID, in txn: LMDBReadTransaction) throws -> UInt64 {
        try feeds.zoneHead(database, zone, in: txn)
    }

    /// `FeedKeys.zone(database, zone)` from this log's cache of recently derived keys:
    /// for readers that key many lookups by one zone (a fetch of many IDs).
    public func zoneKey(_ database: DatabaseID, _ zone: ZoneID) -> [UInt8] {
        feeds.keys.zone(database, zone)
    }

    /// The last position of a database's feed, as `txn` sees it (0: never written).
    public func databaseHead(_ database: DatabaseID, in txn: LMDBReadTransaction) throws -> UInt64 {
        try feeds.databaseHead(database, in: txn)
    }

    // MARK: - Verification

    /// Re-derives the hash chain from the stored frames `from` through `through`,
    /// checking each frame's checksum, decompression, decoding, sequence and hash,
    /// and (when the range reaches the end) the stored head. Names the first bad
    /// sequence. `progress` is called with the number of frames checked so far.
    ///
    /// A log that dropped commits (retention) is checked from its first retained
    /// commit, chained from the hash `meta` keeps for the commit before it; the
    /// report's `from` says where the check began.
    public func verifyChain(
        from: UInt64 = 1, through: UInt64 = .max, progress: ((UInt64) throws -> Void)? = nil
    ) throws -> ChainReport {
        var report = ChainReport(from: max(from, 1), verified: 0)
        try logEnvironment.read { txn in
            let storedHead = try Self.readHead(tables.meta, in: txn)
            let base = try Self.readRetainedBase(tables.meta, in: txn)
            let start = max(from, base.sequence + 1, 1)
            report.from = start
            var previousHash = LogHead.genesisHash
            if start == base.sequence + 1 {
                previousHash = base.hash
            } else if start > 1 {
                guard let prior = try txn.withValue(tables.log, key: BigEndian.bytes(start - 1), { buffer in
                    try? Frame(parsing: buffer, expectedSequence: start - 1)
                }) ?? nil else {
                    report.firstBad = start - 1
                    report.problem = "the frame before the range is missing or damaged"
                    return
                }
                previousHash = prior.chainHash
            }
            var expected = start
            let end: [UInt8]? = through == .max ? nil : BigEndian.bytes(through + 1)
            try txn.scan(tables.log, from: BigEndian.bytes(start), to: end) { key, value in
                let sequence = BigEndian.decode(UInt64.self, from: key) ?? 0
                guard sequence == expected else {
                    report.firstBad = expected
                    report.problem = "commit \(expected) is missing (next stored is \(sequence))"
                    return false
                }
                do {
                    let frame = try Frame(parsing: value, expectedSequence: sequence)
                    let decoded = try decodeCommit(frame)
                    guard Self.chainHash(previous: previousHash, commitBytes: decoded.bytes) == frame.chainHash else {
                        throw LogError.chainBroken(sequence: sequence)
                    }
                    previousHash = frame.chainHash
                } catch let error as LogError {
                    report.firstBad = sequence
                    report.problem = error.description
                    return false
                }
                report.verified += 1
                expected += 1
                if report.verified % 10_000 == 0 { try progress?(report.verified) }
                return true
            }
            if report.isIntact && through >= storedHead.sequence {
                if expected - 1 != storedHead.sequence || (storedHead.sequence >= start && previousHash != storedHead.hash) {
                    report.firstBad = storedHead.sequence
                    report.problem = "stored head \(storedHead) does not match the last frame (\(expected - 1))"
                }
            }
        }
        try progress?(report.verified)
        return report
    }

    // MARK: - Internals shared with AppendSession

    /// A frame's chain hash: SHA-256(the previous frame's chain hash ‖ its commit
    /// bytes), ``LogHead/genesisHash`` before the first (`Docs/LOG-FORMAT.md` §6).
    public static func chainHash(previous: [UInt8], commitBytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(data: commitBytes)
        return Array(hasher.finalize())
    }

    /// Decompresses and decodes a parsed frame, mapping every failure to
    /// `corruptFrame` for that sequence; also returns the commit bytes (for the
    /// callers that hash them).
    func decodeCommit(_ frame: Frame, extraDictionaries: [UInt32: ZstdDictionary] = [:]) throws(LogError)
        -> (commit: Commit, bytes: [UInt8])
    {
        let bytes: [UInt8]
        if frame.isCompressed {
            let dictionary = try dictionary(frame.dictionaryID, of: frame.sequence, extra: extraDictionaries)
            let decompressor = takeDecompressor()
            defer { returnDecompressor(decompressor) }
            guard let decompressor else { throw .storage("cannot create a zstd decompression context") }
            do {
                bytes = try decompressor.decompress(
                    frame.payload, dictionary: dictionary, maxOutputSize: frame.uncompressedLength)
            } catch {
                throw .corruptFrame(sequence: frame.sequence, reason: "\(error)")
            }
        } else {
            bytes = frame.payload
        }
        do {
            let commit = try bytes.withUnsafeBytes { buffer in
                try Self.view(of: buffer, sequence: frame.sequence, length: frame.uncompressedLength).commit()
            }
            return (commit, bytes)
        } catch let error as LogError {
            throw error
        } catch {
            throw .corruptFrame(sequence: frame.sequence, reason: "\(error)")
        }
    }

    /// Decodes a frame read in place (``withCommitView(_:_:)``, then every event).
    func decodeCommit(_ frame: FrameView) throws(LogError) -> Commit {
        do {
            return try withCommitView(frame) { view in try view.commit() }
        } catch let error as LogError {
            throw error
        } catch {
            // Not reached: the view and the decoder throw only `LogError`.
            throw .corruptFrame(sequence: frame.sequence, reason: "\(error)")
        }
    }

    /// Calls `body` with the commit in a frame read in place, its header parsed and
    /// its events still encoded (``CommitView``). The payload is decompressed into
    /// the pooled decompressor's reused buffer, so a sequential read allocates
    /// nothing per frame; the view is valid only during `body`. A frame whose bytes
    /// do not hold the commit its header names throws ``LogError/corruptFrame(sequence:reason:)``;
    /// what `body` throws is rethrown as it is.
    func withCommitView<Value>(_ frame: FrameView, _ body: (CommitView) throws -> Value) throws -> Value {
        let (sequence, length) = (frame.sequence, frame.uncompressedLength)
        guard frame.isCompressed else { return try body(try Self.view(of: frame.payload, sequence: sequence, length: length)) }
        let dictionary = try dictionary(frame.dictionaryID, of: frame.sequence, extra: [:])
        let decompressor = takeDecompressor()
        defer { returnDecompressor(decompressor) }
        guard let decompressor else { throw LogError.storage("cannot create a zstd decompression context") }
        // What `body` throws passes through; only decompression's own errors are the frame's.
        var outcome: Result<Value, any Error>?
        do {
            try decompressor.withDecompressed(
                frame.payload, dictionary: dictionary, maxOutputSize: frame.uncompressedLength
            ) { bytes in
                let view = try Self.view(of: bytes, sequence: sequence, length: length)
                outcome = Result { try body(view) }
            }
        } catch let error as LogError {
            throw error
        } catch {
            throw LogError.corruptFrame(sequence: frame.sequence, reason: "\(error)")
        }
        guard let outcome else { throw LogError.storage("decompression returned without a commit") }
        return try outcome.get()
    }

    /// The dictionary frame `sequence` names (`nil` for 0), from `extra` or the log's own.
    private func dictionary(_ id: UInt32, of sequence: UInt64, extra: [UInt32: ZstdDictionary]) throws(LogError)
        -> ZstdDictionary?
    {
        guard id != 0 else { return nil }
        guard let dictionary = extra[id] ?? state.withLock({ $0.dictionaries[id] }) else {
            throw .unknownDictionary(sequence: sequence, dictionaryID: id)
        }
        return dictionary
    }

    /// The header of the commit in a frame's decompressed bytes, which must be as long
    /// as the frame's header says and hold that frame's sequence.
    private static func view(of bytes: UnsafeRawBufferPointer, sequence: UInt64, length: Int) throws(LogError)
        -> CommitView
    {
        guard bytes.count == length else {
            throw .corruptFrame(sequence: sequence, reason: "decompressed to \(bytes.count) bytes, header says \(length)")
        }
        let view: CommitView
        do {
            view = try CommitView(parsing: bytes)
        } catch {
            throw .corruptFrame(sequence: sequence, reason: "\(error)")
        }
        guard view.sequence == sequence else {
            throw .corruptFrame(sequence: sequence, reason: "holds commit \(view.sequence)")
        }
        return view
    }

    private func takeDecompressor() -> ZstdDecompressor? {
        if let pooled = decompressors.withLock({ $0.popLast() }) { return pooled }
        return try? ZstdDecompressor()
    }

    private func returnDecompressor(_ decompressor: ZstdDecompressor?) {
        guard let decompressor else { return }
        decompressors.withLock { pool in
            if pool.count < 8 { pool.append(decompressor) }
        }
    }

    /// The compressor and ID for new frames.
    func currentCompression() -> CurrentDictionary? { state.withLock { $0.current } }

    func dictionary(_ id: UInt32) -> ZstdDictionary? { state.withLock { $0.dictionaries[id] } }

    /// The highest dictionary ID installed so far.
    func highestDictionaryID() -> UInt32? { state.withLock { $0.dictionaries.keys.max() } }
}
