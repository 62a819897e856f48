import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Periodic view checkpoints, so `replay --at` a point late in a long log need not
/// apply every commit from the first (`Docs/PERFORMANCE.md`, Tools, measures both).
///
/// A checkpoint at sequence S is exactly what `replay --at S` writes — the log's
/// frames 1…S and views derived from them — in `DIR/<S, 20 digits>/`, by default
/// under `checkpoints/` beside a data directory's `data.mdb`. They are **derived**
/// (made by replaying the log), **optional** (replay works without them) and
/// **rebuildable** (delete the directory and build again); a checkpoint whose
/// log ID or chain hash at S differs from the source's, or whose views an older
/// layout made (``ViewRebuilder/format``), is ignored — and replaced by the next
/// build — so a stale or foreign one can never leak into a replay.
public enum Checkpoints {
    /// One checkpoint.
    public struct Checkpoint: Sendable, Hashable {
        /// The last commit it holds.
        public var sequence: UInt64
        /// Its directory.
        public var path: String
    }

    /// The default checkpoint directory of the data directory at `dataPath`.
    public static func defaultDirectory(forData dataPath: String) -> String {
        dataPath + "/checkpoints"
    }

    /// The checkpoints in `directory`, oldest first (none if it does not exist).
    public static func list(in directory: String) -> [Checkpoint] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard let sequence = SequenceName.parse(name) else { return nil }
            return Checkpoint(sequence: sequence, path: directory + "/" + name)
        }.sorted { $0.sequence < $1.sequence }
    }


    /// The newest checkpoint at or before `sequence` that holds a prefix of `source`'s
    /// log (same log ID, same chain hash at its head) with views of the current
    /// layout, or `nil`. A replay continues the copied views with this build's code,
    /// so views of another layout would be mixed with it, entries nothing deletes.
    public static func latest(in directory: String, atOrBefore sequence: UInt64, matching source: LogStore) throws -> Checkpoint? {
        for checkpoint in list(in: directory).reversed() where checkpoint.sequence <= sequence && checkpoint.sequence > 0 {
            if try matches(checkpoint, source) { return checkpoint }
        }
        return nil
    }

    private static func matches(_ checkpoint: Checkpoint, _ source: LogStore) throws -> Bool {
        guard FileManager.default.fileExists(atPath: checkpoint.path + "/data.mdb") else { return false }
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        guard let environment = try? LMDBEnvironment(path: checkpoint.path, options: options),
            let store = try? LogStore(environment: environment)
        else { return false }
        let head = store.head
        guard store.logID == source.logID, head.sequence == checkpoint.sequence,
            (try? ViewRebuilder.storedFormat(in: environment)) == ViewRebuilder.format
        else { return false }
        return try source.chainHash(at: checkpoint.sequence) == head.hash
    }

    /// Adds checkpoints to `directory` at every multiple of `every` up to the head of
    /// `source` that has none yet, replaying from the newest valid checkpoint (so
    /// keeping them current costs only the new commits). Returns those made.
    /// `progress` gets the last sequence replayed.
    @discardableResult
    public static func build(
        _ source: LogStore, in directory: String, every: UInt64, progress: ((UInt64) throws -> Void)? = nil
    ) throws -> [Checkpoint] {
        guard every > 0 else { throw CumulusError(.invalidArguments, "checkpoints must be at least 1 commit apart") }
        let head = try source.lastSequence()
        let target = head / every * every
        guard target > 0 else { return [] }
        let manager = FileManager.default
        try manager.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: Int(FilePermissions.directory)])
        let start = try latest(in: directory, atOrBefore: target, matching: source)
        guard (start?.sequence ?? 0) < target else { return [] }
        let scratch = directory + "/.building-\(UUID.random().uuidString)"
        defer { try? manager.removeItem(atPath: scratch) }
        if let start { try Replayer.copy(start, to: scratch) }
        var made: [Checkpoint] = []
        var options = LMDBEnvironment.Options()
        options.durable = false  // scratch: each checkpoint is a consistent copy of it
        let environment = try LMDBEnvironment(path: scratch, options: options)
        let store = start == nil
            ? try LogStore.emptyCopy(in: environment, logID: source.logID, epoch: source.epoch)
            : try LogStore(environment: environment)
        let views = try Views(environment: environment)
        try Replayer.appendAndApply(source, through: target, into: store, views, stops: every, progress: progress) {
            sequence in
            let path = directory + "/" + SequenceName.of(sequence)
            guard try !matches(Checkpoint(sequence: sequence, path: path), source) else { return }
            try Replayer.markReplayed(environment, through: sequence)
            try ViewRebuilder.markCurrent(environment)
            // A partial copy must never look like a checkpoint: copy, then rename.
            let partial = directory + "/.partial-\(SequenceName.of(sequence))"
            try? manager.removeItem(atPath: partial)
            try store.copyEnvironments(to: partial)
            try? manager.removeItem(atPath: path)
            try manager.moveItem(atPath: partial, toPath: path)
            made.append(Checkpoint(sequence: sequence, path: path))
        }
        return made
    }
}
