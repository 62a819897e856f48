import CumulusModel
import CumulusStorage

/// Where each leader epoch began (issue 16 "epoch starts"; `Docs/ARCHITECTURE.md`, "Replication").
///
/// A leader that wins an epoch (an election, or `cumulus promote`) first appends a
/// commit holding one ``Event/epochBegan(epoch:)``. The log notes its sequence under the
/// epoch in `meta` as it appends it, on the leader and — since followers append the same
/// frames — on every node, a replay and a seeded copy alike.
///
/// **Why.** When a leader dies holding commits no follower had, the next leader's
/// epoch begins where the survivors' logs end, and the dead leader's last commits are
/// a fork nobody else has. A token or sequence it handed out for them names a position
/// this history reaches later with other commits; served as though it were ours, a
/// client would silently miss changes. The start of the next epoch is exactly where
/// the old epoch's history ends here, so anything from the old epoch that points past
/// it came from the fork, and gets CloudKit's expired-token answer instead.
///
/// ```
/// meta  "epochStart/" ‖ u64 epoch (BE)  →  u64 sequence of its epochBegan commit (BE)
/// ```
extension LogStore {
    /// One epoch's start in this log.
    public struct EpochStart: Sendable, Hashable {
        /// The epoch.
        public var epoch: UInt64
        /// The sequence of the commit that began it.
        public var sequence: UInt64

        /// An epoch start.
        public init(epoch: UInt64, sequence: UInt64) {
            self.epoch = epoch
            self.sequence = sequence
        }
    }

    static let metaEpochStartPrefix: [UInt8] = Array("epochStart/".utf8)

    static func epochStartKey(_ epoch: UInt64) -> [UInt8] { metaEpochStartPrefix + BigEndian.bytes(epoch) }

    /// Notes that `epoch` began at `sequence` (inside the append's transaction). An
    /// epoch begins once, after every epoch already recorded: anything else is a log
    /// that was not written by one leader after another, and is refused as damaged.
    func recordEpochStart(_ epoch: UInt64, at sequence: UInt64, in txn: LMDBWriteTransaction) throws {
        if let last = try lastEpochStart(in: txn), last.epoch >= epoch {
            throw LogError.corruptFrame(
                sequence: sequence, reason: "epoch \(epoch) begins after epoch \(last.epoch) began at \(last.sequence)")
        }
        try txn.put(tables.meta, key: Self.epochStartKey(epoch), value: BigEndian.bytes(sequence))
    }

    /// Every recorded epoch start, oldest first.
    public func epochStarts() throws -> [EpochStart] {
        try logEnvironment.read { txn in
            var starts: [EpochStart] = []
            try scanEpochStarts(from: 0, in: txn) { starts.append($0); return true }
            return starts
        }
    }

    /// The newest recorded epoch start, as `txn` sees it.
    public func lastEpochStart(in txn: LMDBReadTransaction) throws -> EpochStart? {
        var found: EpochStart?
        try txn.scan(tables.meta, prefix: Self.metaEpochStartPrefix, reverse: true) { key, value in
            found = try Self.epochStart(key, value)
            return false
        }
        return found
    }

    /// The last sequence epoch `epoch` holds in this log's history: the one before the
    /// first later epoch recorded here began. `nil` when no later epoch began here —
    /// `epoch` is this log's own, or newer, or its successors left no mark (a log from
    /// before epoch starts were recorded) — and nothing past it can be called a fork.
    public func lastSequence(ofEpoch epoch: UInt64, in txn: LMDBReadTransaction) throws -> UInt64? {
        guard epoch < .max else { return nil }
        var end: UInt64?
        try scanEpochStarts(from: epoch + 1, in: txn) { start in
            end = start.sequence - 1
            return false
        }
        return end
    }

    private func scanEpochStarts(
        from epoch: UInt64, in txn: LMDBReadTransaction, _ body: (EpochStart) throws -> Bool
    ) throws {
        let upper = LMDBReadTransaction.upperBound(ofPrefix: Self.metaEpochStartPrefix)
        try txn.scan(tables.meta, from: Self.epochStartKey(epoch), to: upper) { key, value in
            try body(try Self.epochStart(key, value))
        }
    }

    private static func epochStart(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> EpochStart {
        let prefix = metaEpochStartPrefix.count
        guard key.count == prefix + 8, let epoch = BigEndian.decode(UInt64.self, from: key, at: prefix),
            value.count == 8, let sequence = BigEndian.decode(UInt64.self, from: value), sequence >= 1
        else {
            throw LogError.storage("a malformed epoch start in meta")
        }
        return EpochStart(epoch: epoch, sequence: sequence)
    }

    /// Moves this log into the epoch `choose` picks from the stored one (and whether the
    /// log is empty), in one transaction: stores the epoch, removes the follower mark,
    /// and — if the log holds commits — appends the commit that begins the epoch,
    /// applied by `apply` (the views; they take nothing from it today, but every commit
    /// passes through them). Returns the epoch and that commit once durable. A log with
    /// no commits records no start: no token can point into a history it does not have.
    func enterEpoch(
        choosing choose: (_ stored: UInt64, _ empty: Bool) throws -> UInt64,
        apply: ((Commit, LMDBWriteTransaction) throws -> Void)?
    ) throws -> (epoch: UInt64, commit: Commit?) {
        let tables = self.tables
        let stored = try logEnvironment.read { txn in
            try txn.get(tables.meta, key: Self.metaEpoch).flatMap { BigEndian.decode(UInt64.self, from: $0) } ?? 1
        }
        let storeEpoch = { (epoch: UInt64, txn: LMDBWriteTransaction) throws in
            try txn.put(tables.meta, key: Self.metaEpoch, value: BigEndian.bytes(epoch))
            _ = try txn.delete(tables.meta, key: Self.metaRole)
        }
        let epoch: UInt64
        var commit: Commit?
        var outcome: AppendSession.Outcome?
        if head.sequence == 0 {
            epoch = try choose(stored, true)
            try logEnvironment.write { try storeEpoch(epoch, $0) }
        } else {
            epoch = try choose(stored, false)
            (commit, outcome) = try appendWrite(also: { try storeEpoch(epoch, $0) }, catchUp: { try apply?($0, $1) }) {
                txn -> (Commit?, AppendSession.Outcome) in
                var session = try beginAppend(in: txn)
                let request = CommitRequest(actor: "", requestID: "epoch-\(epoch)", events: [.epochBegan(epoch: epoch)])
                let (commit, _) = try session.append(request, now: .now(), in: txn)
                try apply?(commit, txn)
                return (commit, try session.finish(in: txn))
            }
        }
        state.withLock { $0.epoch = epoch }
        if let outcome { didCommit(outcome) }
        return (epoch, commit)
    }
}
