import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Time travel: writes a data directory holding the state as of one commit — the
/// log up to it, frame for frame, and views derived by applying each commit with
/// ``Views/apply(_:in:)`` (the one derivation path), in the same transaction that
/// appends its frame, exactly as a follower does.
///
/// The copy has the source's log identity (log ID and epoch), so its chain and
/// tokens are recognisably the same log's; `cumulus log verify` passes on it. Its
/// credentials (`auth`) and server secret are copied, so the same tokens read it.
/// When done, `data.mdb` is made read-only (mode 0444) and `meta` records
/// `replayedThrough`, so only a read-only open (`Container(path:environmentOptions:)`
/// with `readOnly`, `cumulus serve --read-only`) succeeds — except for root, whom
/// file modes do not stop.
public enum Replayer {
    /// What a replay wrote.
    public struct Result: Sendable, Hashable {
        /// The last commit in the copy.
        public var sequence: UInt64
        /// Where it is.
        public var path: String
        /// The checkpoint it started from, if any (``Checkpoints``).
        public var checkpoint: UInt64?
    }

    /// Commits per write transaction.
    public static let batchSize: UInt64 = 2_000

    /// Replays `source` through `sequence` into a new directory `outPath`, which must
    /// not exist or be empty. With `checkpoints` (a directory ``Checkpoints/build(_:in:every:progress:)``
    /// filled), it starts from the latest checkpoint at or before `sequence` that
    /// matches the source's chain, and replays only the rest. `progress` gets the
    /// last sequence replayed.
    @discardableResult
    public static func replay(
        _ source: LogStore, through sequence: UInt64, to outPath: String, checkpoints: String? = nil,
        progress: ((UInt64) throws -> Void)? = nil
    ) throws -> Result {
        let head = try source.lastSequence()
        guard sequence <= head else {
            throw CumulusError(.invalidArguments, "sequence \(sequence) is past the head of the log (\(head))")
        }
        let manager = FileManager.default
        if manager.fileExists(atPath: outPath) {
            let contents = (try? manager.contentsOfDirectory(atPath: outPath)) ?? ["?"]
            guard contents.isEmpty else {
                throw CumulusError(.invalidArguments, "\(outPath) exists and is not empty; name a new directory")
            }
        }
        let start = try checkpoints.flatMap { try Checkpoints.latest(in: $0, atOrBefore: sequence, matching: source) }
        if let start { try copy(start, to: outPath) }
        do {
            var options = LMDBEnvironment.Options()
            // Nothing is acknowledged to anyone while this runs: sync once at the end.
            options.durable = false
            let environment = try LMDBEnvironment(path: outPath, options: options)
            let store = start == nil
                ? try LogStore.emptyCopy(in: environment, logID: source.logID, epoch: source.epoch)
                : try LogStore(environment: environment)
            let views = try Views(environment: environment)
            try appendAndApply(source, through: sequence, into: store, views, progress: progress)
            try copyTables(from: source.logEnvironment, to: store.logEnvironment)
            try markReplayed(environment, through: sequence)
            try ViewRebuilder.markCurrent(environment)
            try environment.sync(force: true)
            try store.logEnvironment.sync(force: true)
        }
        for file in Self.environmentFiles { try FilePermissions.set(FilePermissions.readOnlyFile, on: outPath + file) }
        return Result(sequence: sequence, path: outPath, checkpoint: start?.sequence)
    }

    /// Appends `source`'s frames after `store`'s head through `sequence`, byte for
    /// byte, applying each commit to `views` in the transaction that appends it (a
    /// follower's path). `stops` are sequences a batch must end at (checkpoints),
    /// and `reached` is called at each.
    ///
    /// While one batch is written, the next is read, decoded and derived
    /// (``Views/derive(_:in:)``) on another thread: those were about half of a
    /// replay's time, and need nothing of the transaction.
    static func appendAndApply(
        _ source: LogStore, through sequence: UInt64, into store: LogStore, _ views: Views, stops: UInt64 = 0,
        progress: ((UInt64) throws -> Void)?, reached: ((UInt64) throws -> Void)? = nil
    ) throws {
        let environment = store.environment
        func prepare(from next: UInt64, _ decoder: FrameDecoder) -> BackgroundWork<PreparedBatch>? {
            guard next <= sequence else { return nil }
            var last = min(sequence, next + batchSize - 1)
            // End batches at checkpoints: the first multiple of `stops` at or after `next`.
            if stops > 0 { last = min(last, ((next - 1) / stops + 1) * stops) }
            return BackgroundWork { [last] in
                try PreparedBatch(source, from: next, through: last, decoder: decoder, views: views, environment: environment)
            }
        }
        try BackgroundWork.pipeline(
            first: prepare(from: store.head.sequence + 1, FrameDecoder(store: source)),
            next: { prepare(from: $0.last + 1, $0.decoder) }
        ) { batch in
            let prepared = batch.prepared
            let appended = try store.appendFrames(prepared.frames, decoded: prepared.decoded) { index, commit, txn in
                try prepared.apply(index, commit, to: views, in: txn)
            }
            store.didCommit(appended.outcome)
            try progress?(batch.last)
            if stops > 0, batch.last % stops == 0 { try reached?(batch.last) }
            // The batch is freed on this thread, at the end of the pipeline's step. Freeing
            // it on a third thread took that work off this one and cost the replay as much
            // elsewhere: both cores are busy (Docs/PERFORMANCE.md, "Tried and not kept").
        }
    }

    /// One batch of a replay, read, decoded and derived ahead of its transaction.
    struct PreparedBatch: Sendable {
        /// The last sequence it holds.
        let last: UInt64
        /// Its frames, decoded and derived.
        let prepared: PreparedFrames
        /// The decoder, with the dictionaries this batch installs, for the next batch.
        let decoder: FrameDecoder

        init(
            _ source: LogStore, from next: UInt64, through last: UInt64, decoder: FrameDecoder, views: Views,
            environment: LMDBEnvironment
        ) throws {
            let frames = try source.rawFrames(from: next, limit: Int(last - next + 1), maxBytes: .max)
            guard frames.count == Int(last - next + 1) else { throw LogError.missing(sequence: next) }
            var decoder = decoder
            // Schemas as of the batches written so far: a record whose schema this batch
            // or the one being written changes is derived again when applied.
            prepared = try PreparedFrames(frames, decoder: &decoder, views: views, environment: environment)
            self.decoder = decoder
            self.last = last
        }
    }

    /// The data files of a data directory's two environments, from its path.
    public static let environmentFiles = ["/data.mdb", "/" + DataLayout.logDirectoryName + "/data.mdb"]

    /// Copies the environments of `checkpoint` into the new data directory `path`, to
    /// replay on from it.
    static func copy(_ checkpoint: Checkpoints.Checkpoint, to path: String) throws {
        try FileManager.default.createDirectory(
            atPath: DataLayout.logPath(path), withIntermediateDirectories: true,
            attributes: [.posixPermissions: Int(FilePermissions.directory)])
        for file in environmentFiles {
            try FileManager.default.copyItem(atPath: checkpoint.path + file, toPath: path + file)
            // The copy keeps the checkpoint's mode; it is written to from here on.
            try FilePermissions.set(FilePermissions.file, on: path + file)
        }
    }

    static func markReplayed(_ environment: LMDBEnvironment, through sequence: UInt64) throws {
        let meta = try DataLayout.open(.viewsState, in: environment)
        try environment.write { txn in
            try txn.put(meta, key: DataLayout.replayedThroughKey, value: BigEndian.bytes(sequence))
        }
    }

    /// The sequence a replayed directory stops at, or `nil` for a live directory.
    public static func replayedThrough(_ store: LogStore) throws -> UInt64? {
        guard let meta = try? DataLayout.open(.viewsState, in: store.environment) else { return nil }
        return try store.environment.read { txn in
            try txn.get(meta, key: DataLayout.replayedThroughKey).flatMap { BigEndian.decode(UInt64.self, from: $0) }
        }
    }

    private static func copyTables(from source: LMDBEnvironment, to target: LMDBEnvironment) throws {
        // Configuration is not derived from the log, but the copy needs it to serve.
        for table in DataLayout.configurationTables {
            let into = try DataLayout.open(table, in: target)
            // A read-only source lacks tables it never created.
            guard let from = try? DataLayout.open(table, in: source) else { continue }
            var entries: [([UInt8], [UInt8])] = []
            try source.read { txn in
                try txn.scan(from) { key, value in
                    entries.append((Array(key), Array(value)))
                    return true
                }
            }
            try target.write { txn in
                // A checkpoint may hold an older copy: the source's current one wins.
                try txn.clear(into)
                for (key, value) in entries { try txn.put(into, key: key, value: value) }
            }
        }
        // A container needs a server secret to open read-only; a source without one
        // (never served) gets a fresh one, as Container would make.
        let secrets = try DataLayout.open(.secrets, in: target)
        try target.write { txn in try DataLayout.ensureServerSecret(in: txn, secrets) }
    }
}
