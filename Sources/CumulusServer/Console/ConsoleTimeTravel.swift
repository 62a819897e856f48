import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTools
import Foundation
import Glibc
import Synchronization

/// The console's "as of" (issue 45): the data as it was after a past commit, read through
/// the same routes and access rules as the data now.
///
/// A past state is a replayed data directory (``Replayer``, `cumulus replay --at`): the
/// newest time-travel checkpoint at or before the commit (`DATA/checkpoints`, made by
/// `cumulus checkpoint`), plus a replay of the commits after it, opened read-only. Copies
/// are kept in a bounded cache under `DATA/console-as-of`, emptied when the node starts:
/// at most ``Limits/copies`` at once, the least recently used going first.
///
/// **Budgets.** A request that would replay more than ``Limits/commitsPerRequest``
/// commits past its checkpoint is refused with `limitExceeded` saying so (build
/// checkpoints to bring it within reach), and so is one whose copy, estimated at the live
/// directory's size, would leave less than ``Limits/minimumFreeBytes`` free on the disk:
/// nothing the console does fills the disk. Replays run on a thread of their own, never on
/// the pool that answers requests, one at a time.
public final class ConsoleTimeTravel: Sendable {
    /// What the cache may spend.
    public struct Limits: Sendable {
        /// Most past states kept at once.
        public var copies = 4
        /// Most commits one request may replay after its checkpoint.
        public var commitsPerRequest: UInt64 = 250_000
        /// Free disk space a new copy must leave.
        public var minimumFreeBytes: Int64 = 1 << 30

        /// The defaults.
        public init() {}
    }

    /// A past state: the commit it ends at, and its data opened read-only.
    public struct Past: Sendable {
        /// The last commit it holds (0: before the first).
        public var sequence: UInt64
        /// That commit's time, if there is one.
        public var time: Timestamp?
        /// The state, read-only.
        public var container: Container
        /// The checkpoint it was replayed from, if any.
        public var checkpoint: UInt64?
        /// How many commits were replayed after it.
        public var replayed: UInt64
    }

    private struct Cached {
        var past: Past
        var lastUsed: ContinuousClock.Instant
    }

    /// The live data.
    let source: Container
    /// Where copies are made.
    let directory: String
    /// Where `cumulus checkpoint` keeps checkpoints.
    let checkpoints: String
    let limits: Limits
    private let cache = Mutex<[UInt64: Cached]>([:])
    /// Where replays asked for by a read run, one at a time, off the process's shared
    /// pools: each is disk- and CPU-bound, and two for the same commit would do the work
    /// twice.
    private let replays = SerialThread(name: "cumulus.console.as-of")
    /// Held while a replay runs, from the queue above or a console job's thread.
    private let replaying = Mutex(())

    /// A cache for `source`'s data directory, emptied of any copies a previous run left.
    public init(source: Container, limits: Limits = Limits()) {
        self.source = source
        self.limits = limits
        directory = source.path + "/console-as-of"
        checkpoints = Checkpoints.defaultDirectory(forData: source.path)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The state after the commit `point` names (a sequence, or the last commit at or
    /// before a time), replayed now unless a copy is kept.
    public func past(_ point: PointInTime) async throws -> Past {
        let sequence = try point.resolve(in: source.store)
        if let kept = use(sequence) { return kept }
        return try await withCheckedThrowingContinuation { continuation in
            replays.submit { [self] in
                continuation.resume(with: Result { try prepare(.sequence(sequence), progress: nil) })
            }
        }
    }

    /// ``past(_:)`` on the calling thread (a console job's), with `progress` hearing the
    /// last commit replayed after each batch; a throw from it stops the replay and
    /// leaves nothing behind. One replay runs at a time, whichever thread asks.
    public func prepare(_ point: PointInTime, progress: ((UInt64) throws -> Void)?) throws -> Past {
        let sequence = try point.resolve(in: source.store)
        return try replaying.withLock { _ in try replay(through: sequence, progress: progress) }
    }

    /// The kept copy of `sequence`, marked used now.
    private func use(_ sequence: UInt64) -> Past? {
        cache.withLock { cache in
            cache[sequence]?.lastUsed = .now
            return cache[sequence]?.past
        }
    }

    private func replay(through sequence: UInt64, progress: ((UInt64) throws -> Void)?) throws -> Past {
        // Made while this one waited.
        if let kept = use(sequence) { return kept }
        let store = source.store
        let checkpoint = try Checkpoints.latest(in: checkpoints, atOrBefore: sequence, matching: store)
        let work = sequence - (checkpoint?.sequence ?? 0)
        guard work <= limits.commitsPerRequest else {
            throw CumulusError(
                .limitExceeded,
                "showing the data as of #\(sequence) would replay \(work) commits; the console replays at most "
                    + "\(limits.commitsPerRequest) past a checkpoint. Make checkpoints with `cumulus checkpoint --data DATA`")
        }
        try checkDisk()
        let path = directory + "/" + SequenceName.of(sequence)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: path)
        do {
            let result = try Replayer.replay(store, through: sequence, to: path, checkpoints: checkpoints, progress: progress)
            var options = LMDBEnvironment.Options()
            options.readOnly = true
            let container = try Container(path: path, environmentOptions: options)
            let time = sequence == 0 ? nil : try store.read(sequence)?.timestamp
            let past = Past(
                sequence: sequence, time: time, container: container, checkpoint: result.checkpoint, replayed: work)
            keep(past, at: path)
            return past
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    /// Keeps `past`, dropping the least recently used copies past the limit (a request
    /// still reading one keeps its container open until it is done; the files go now).
    private func keep(_ past: Past, at path: String) {
        let dropped = cache.withLock { cache -> [UInt64] in
            cache[past.sequence] = Cached(past: past, lastUsed: .now)
            let surplus = cache.count - limits.copies
            guard surplus > 0 else { return [] }
            let oldest = cache.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(surplus).map(\.key)
            for sequence in oldest { cache[sequence] = nil }
            return oldest
        }
        for sequence in dropped { try? FileManager.default.removeItem(atPath: directory + "/" + SequenceName.of(sequence)) }
    }

    /// Refuses a copy that would leave less than ``Limits/minimumFreeBytes`` free,
    /// estimating it at the live directory's size.
    private func checkDisk() throws {
        let estimate = Replayer.environmentFiles.reduce(Int64(0)) { total, file in
            var info = stat()
            guard stat(source.path + file, &info) == 0 else { return total }
            return total + Int64(info.st_blocks) * 512
        }
        var disk = statvfs()
        guard statvfs(source.path, &disk) == 0 else { return }
        let free = Int64(disk.f_bavail) * Int64(disk.f_frsize)
        guard free - estimate >= limits.minimumFreeBytes else {
            throw CumulusError(
                .limitExceeded,
                "a past state needs about \(estimate >> 20) MiB and would leave \(max(0, free - estimate) >> 20) MiB free; "
                    + "the console keeps at least \(limits.minimumFreeBytes >> 20) MiB free")
        }
    }
}
