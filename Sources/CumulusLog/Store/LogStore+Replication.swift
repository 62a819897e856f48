import CumulusModel
import CumulusStorage
import Foundation

/// What replication needs from a log beyond appending and reading commits: its
/// stored frames as bytes, the chain hash at a position, and its identity (log ID
/// and leader epoch), which a follower adopts from its leader and a promotion bumps.
extension LogStore {
    /// A log's identity: the random ID fixed at creation and the leader epoch.
    public struct Identity: Sendable, Hashable {
        /// 16 random bytes.
        public var logID: [UInt8]
        /// The leader epoch: 1 at creation, + 1 at each promotion.
        public var epoch: UInt64

        /// An identity.
        public init(logID: [UInt8], epoch: UInt64) {
            self.logID = logID
            self.epoch = epoch
        }
    }

    /// What ``appendFrames(_:applying:)`` did: the commits appended, their stored
    /// bytes, the outcome to publish with ``didCommit(_:)`` once the transaction has
    /// committed, and the time spent inside it before the commit (append + apply).
    public struct FramesAppended: Sendable {
        /// The commits appended, in order.
        public let commits: [Commit]
        /// Frame bytes stored.
        public let bytes: Int
        /// Pass to ``didCommit(_:)``.
        public let outcome: AppendSession.Outcome
        /// Appending and applying, without the transaction's commit (fsync).
        public let body: Duration
    }

    /// Appends `frames` made by another log (a leader's, or a source log being
    /// replayed) after the head, byte for byte, in one transaction, calling `apply`
    /// for each commit inside it: the one loop of a follower's batch and of a replay,
    /// so both append and derive views exactly as the leader did. Nothing is appended
    /// if any frame is refused or `apply` throws. The caller publishes the outcome.
    public func appendFrames(
        _ frames: [[UInt8]], applying apply: ((Commit, LMDBWriteTransaction) throws -> Void)?
    ) throws -> FramesAppended {
        try appendFrames(frames, decoded: [], catchUp: { try apply?($0, $1) }) { _, commit, txn in try apply?(commit, txn) }
    }

    /// ``appendFrames(_:applying:)`` with frames decoded ahead (``FrameDecoder``):
    /// `decoded` is empty or holds, for each frame, its decoding (`nil`: decode it
    /// here). `apply` also gets each commit's index in `frames`, so a caller that
    /// derived more from the batch ahead can find its part.
    public func appendFrames(
        _ frames: [[UInt8]], decoded: [DecodedFrame?], catchUp catchUpApply: ViewApplier = LogStore.withoutViews,
        applying apply: (Int, Commit, LMDBWriteTransaction) throws -> Void
    ) throws -> FramesAppended {
        precondition(decoded.isEmpty || decoded.count == frames.count, "one decoding per frame, or none")
        let clock = ContinuousClock()
        let started = clock.now
        var body = Duration.zero
        let ((commits, bytes), outcome) = try appendWrite(catchUp: catchUpApply) { txn in
            var commits: [Commit] = []
            var session = try beginAppend(in: txn)
            for (index, frame) in frames.enumerated() {
                let commit: Commit
                if !decoded.isEmpty, let ahead = decoded[index] {
                    commit = try session.appendFrame(ahead, in: txn)
                } else {
                    commit = try session.appendFrame(frame, in: txn)
                }
                try apply(index, commit, txn)
                commits.append(commit)
            }
            let outcome = try session.finish(in: txn)
            body = clock.now - started
            return ((commits, session.appendedBytes), outcome)
        }
        return FramesAppended(commits: commits, bytes: bytes, outcome: outcome, body: body)
    }

    /// Writes `identity` into the log environment `environment` before a ``LogStore`` is
    /// opened on it, so a follower's log carries its leader's identity from its first
    /// commit. Refuses an environment that holds commits of another log; never lowers
    /// a stored epoch. With `follower`, also marks the directory as a follower's (see
    /// ``isFollowerDirectory``).
    public static func seedIdentity(
        _ identity: Identity, follower: Bool = false, in environment: LMDBEnvironment,
        also extra: ((LMDBWriteTransaction) throws -> Void)? = nil
    ) throws {
        guard identity.logID.count == 16, identity.epoch >= 1 else {
            throw LogError.storage("a log identity has a 16-byte ID and an epoch of at least 1")
        }
        let meta = try DataLayout.open(.meta, in: environment)
        try environment.write { txn in
            if try readHead(meta, in: txn).sequence > 0, let existing = try txn.get(meta, key: metaLogID),
                existing != identity.logID
            {
                throw LogError.storage("\(environment.path) already holds another log; it cannot adopt a new identity")
            }
            let stored = try txn.get(meta, key: metaEpoch).flatMap { BigEndian.decode(UInt64.self, from: $0) } ?? 0
            try txn.put(meta, key: metaLogID, value: identity.logID)
            try txn.put(meta, key: metaFormat, value: [storageFormat])
            try txn.put(meta, key: metaEpoch, value: BigEndian.bytes(max(stored, identity.epoch)))
            if follower { try txn.put(meta, key: metaRole, value: Array("follower".utf8)) }
            try extra?(txn)
        }
    }

    static let metaRole: [UInt8] = Array("role".utf8)
    static let metaSupersededBy: [UInt8] = Array("supersededBy".utf8)

    /// Marks the data directory whose log environment is `environment` as a follower's (a downloaded snapshot,
    /// before it is moved into place).
    public static func markFollower(in environment: LMDBEnvironment) throws {
        let meta = try DataLayout.open(.meta, in: environment)
        try environment.write { txn in try txn.put(meta, key: metaRole, value: Array("follower".utf8)) }
    }

    /// Whether this directory was seeded as a follower's and not promoted since: opened
    /// without `--follow`, it must still take no writes, or its log would fork from
    /// its leader's in the same epoch.
    public var isFollowerDirectory: Bool {
        (try? logEnvironment.read { try $0.get(tables.meta, key: Self.metaRole) }) == Array("follower".utf8)
    }

    /// The newer epoch this node learned of while it led, kept so a restart does not
    /// forget it was superseded (`nil`: never).
    public var storedSupersededBy: UInt64? {
        (try? logEnvironment.read { try $0.get(tables.meta, key: Self.metaSupersededBy) })?
            .flatMap { BigEndian.decode(UInt64.self, from: $0) }
    }

    /// Records that this node learned of `epoch` and was superseded.
    public func recordSuperseded(by epoch: UInt64) throws {
        guard !logEnvironment.options.readOnly else { return }
        try logEnvironment.write { txn in
            let stored = try txn.get(tables.meta, key: Self.metaSupersededBy).flatMap { BigEndian.decode(UInt64.self, from: $0) } ?? 0
            if epoch > stored { try txn.put(tables.meta, key: Self.metaSupersededBy, value: BigEndian.bytes(epoch)) }
        }
    }

    /// This log's identity.
    public var identity: Identity { Identity(logID: logID, epoch: epoch) }

    /// Raises the stored epoch to `epoch` (a follower adopting its leader's after a
    /// promotion). Never lowers it: a node that has seen epoch N refuses anything
    /// from an older one.
    public func adoptEpoch(_ epoch: UInt64) throws {
        guard epoch > self.epoch else { return }
        try logEnvironment.write { txn in
            let stored = try txn.get(tables.meta, key: Self.metaEpoch).flatMap { BigEndian.decode(UInt64.self, from: $0) } ?? 1
            if epoch > stored { try txn.put(tables.meta, key: Self.metaEpoch, value: BigEndian.bytes(epoch)) }
        }
        state.withLock { $0.epoch = max($0.epoch, epoch) }
    }

    /// Makes this log a leader's in the next epoch (`cumulus promote`); returns the
    /// new epoch. The epoch begins with its own commit (``enterEpoch``), applied by
    /// `apply`. Commits after this one are made in the new epoch; tokens and followers
    /// that have seen it refuse a node still in an older one.
    @discardableResult
    public func promote(applying apply: ((Commit, LMDBWriteTransaction) throws -> Void)?) throws -> UInt64 {
        try enterEpoch(choosing: { stored, _ in stored + 1 }, apply: apply).epoch
    }

    /// Makes this log a cluster leader's in `epoch`, the epoch it won in its cluster's
    /// election: stored, the follower mark removed, and the epoch's first commit
    /// appended and applied by `apply` (``enterEpoch``), all in one transaction; returns
    /// that commit. `epoch` must be newer than the stored one: two leaders in one epoch
    /// could write different commits at the same positions, and nothing downstream could
    /// tell them apart. (A log with no commits may lead in the epoch it has: the first
    /// leader of a new cluster, in epoch 1.)
    @discardableResult
    public func lead(inEpoch epoch: UInt64, applying apply: ((Commit, LMDBWriteTransaction) throws -> Void)?) throws
        -> Commit?
    {
        try enterEpoch(choosing: { stored, empty in
            guard epoch > stored || (epoch == stored && empty) else {
                throw LogError.storage("this log is in epoch \(stored) already; it cannot lead in epoch \(epoch)")
            }
            return epoch
        }, apply: apply).commit
    }

    /// Marks this directory as a follower's (``isFollowerDirectory``): a cluster member
    /// that follows is not to take writes if it is later opened on its own.
    public func markFollower() throws {
        guard !isFollowerDirectory else { return }
        try Self.markFollower(in: logEnvironment)
    }

    /// The stored frames from `from` on, byte for byte as a follower receives them:
    /// at most `limit` frames and, past the first, at most `maxBytes` bytes. From
    /// before the first retained commit: ``LogError/truncated(sequence:firstRetained:)``.
    public func rawFrames(from: UInt64, limit: Int, maxBytes: Int) throws -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var bytes = 0
        guard limit > 0 else { return frames }
        try logEnvironment.read { txn in
            var expected = max(from, 1)
            try checkRetained(expected, in: txn)
            try txn.scan(tables.log, from: BigEndian.bytes(expected), to: nil) { key, value in
                guard BigEndian.decode(UInt64.self, from: key) == expected else {
                    throw LogError.missing(sequence: expected)
                }
                if !frames.isEmpty && bytes + value.count > maxBytes { return false }
                frames.append(Array(value))
                bytes += value.count
                expected += 1
                return frames.count < limit
            }
        }
        return frames
    }

    /// The chain hash of commit `sequence` (the genesis hash for 0), or `nil` if the
    /// log does not hold it. Checks the frame's checksum, not its contents. The last
    /// commit dropped by retention still has its hash (``retainedBase``); an earlier
    /// one throws ``LogError/truncated(sequence:firstRetained:)``.
    public func chainHash(at sequence: UInt64) throws -> [UInt8]? {
        guard sequence > 0 else { return LogHead.genesisHash }
        return try logEnvironment.read { txn in
            let base = try Self.readRetainedBase(tables.meta, in: txn)
            if sequence == base.sequence { return base.hash }
            try checkRetained(sequence, in: txn)
            return try txn.withValue(tables.log, key: BigEndian.bytes(sequence)) { buffer in
                try Frame(parsing: buffer, expectedSequence: sequence).chainHash
            }
        }
    }

    /// The time commit `sequence` was made, or `nil` if the log does not hold it.
    public func timestamp(of sequence: UInt64) throws -> Timestamp? {
        try read(sequence)?.timestamp
    }
}
