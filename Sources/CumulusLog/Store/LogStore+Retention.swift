import CumulusModel
import CumulusStorage

/// Log retention (`cumulus serve --retain-commits N`, `Docs/LOG-FORMAT.md` §8): a
/// leader may drop its oldest frames. What remains is a suffix of the log that still
/// proves itself: `meta` `"retainedFrom"` holds the first retained sequence and the
/// chain hash of the commit before it, so ``verifyChain(from:through:progress:)``
/// and followers check the chain from there as from the genesis hash.
///
/// Only frames go. The feed indexes, the record history index, the dictionaries and
/// the views stay: they describe the state the dropped commits built, which the
/// retained ones continue. What needs the dropped commits themselves — reading one,
/// rebuilding the views from the log, time travel before the first retained commit —
/// throws ``LogError/truncated(sequence:firstRetained:)`` instead.
extension LogStore {
    /// `meta` key: `u64` first retained sequence ‖ the chain hash of the commit before it.
    static let metaRetainedFrom: [UInt8] = Array("retainedFrom".utf8)

    /// The position just before the first retained commit: its sequence is the last
    /// dropped one and its hash that commit's chain hash, which the first retained
    /// frame chains from. ``LogHead/empty`` for a log that never dropped anything.
    public var retainedBase: LogHead { state.withLock { $0.retainedBase } }

    /// The first commit the log still holds (1 for a log that never dropped any).
    public var firstRetained: UInt64 { retainedBase.sequence + 1 }

    /// The retained base as `txn` sees it (the one a reader must use: a drop may have
    /// committed since this process last looked).
    static func readRetainedBase(_ meta: LMDBTable, in txn: LMDBReadTransaction) throws -> LogHead {
        guard let bytes = try txn.get(meta, key: metaRetainedFrom) else { return .empty }
        guard bytes.count == 8 + Frame.hashLength, let first = BigEndian.decode(UInt64.self, from: bytes), first >= 1 else {
            throw LogError.storage("malformed retainedFrom in meta")
        }
        return LogHead(sequence: first - 1, hash: Array(bytes[8...]))
    }

    /// Throws ``LogError/truncated(sequence:firstRetained:)`` if commit `sequence` was
    /// dropped, as `txn` sees the log.
    func checkRetained(_ sequence: UInt64, in txn: LMDBReadTransaction) throws {
        let base = try Self.readRetainedBase(tables.meta, in: txn)
        if sequence >= 1 && sequence <= base.sequence {
            throw LogError.truncated(sequence: sequence, firstRetained: base.sequence + 1)
        }
    }

    /// Drops the oldest retained commits, up to and including `through`, at most
    /// `limit` of them, in one write transaction; returns how many went. Never drops
    /// the head (new commits chain from it, and `verifyChain` checks it is the last
    /// frame). Call it again until it returns 0 to drop more: each call is one short
    /// transaction, so the writer is held up at most one batch at a time.
    ///
    /// **Why its own write transaction, beside ``LogWriter``.** `LMDBEnvironment.write`
    /// serializes this process's writers on one lock, so this transaction and the
    /// writer's groups simply take turns; the writer's appends read only the head
    /// from `meta` (never an old frame), and this touches only frames below the head
    /// and `"retainedFrom"`, so neither can invalidate what the other planned. Going
    /// through the writer's queue instead would tie maintenance to its group commit
    /// and acknowledgement machinery for nothing.
    @discardableResult
    public func dropCommits(through target: UInt64, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        let tables = self.tables
        let (dropped, base) = try logEnvironment.write { txn -> (Int, LogHead) in
            let base = try Self.readRetainedBase(tables.meta, in: txn)
            let head = try Self.readHead(tables.meta, in: txn)
            guard head.sequence > 0 else { return (0, base) }
            let last = min(target, head.sequence - 1, base.sequence + UInt64(limit))
            guard last > base.sequence else { return (0, base) }
            var lastHash: [UInt8]?
            for sequence in (base.sequence + 1)...last {
                let key = BigEndian.bytes(sequence)
                if sequence == last {
                    lastHash = try txn.withValue(tables.log, key: key) { buffer in
                        Array(try FrameView(parsing: buffer, expectedSequence: sequence).chainHash)
                    }
                }
                guard try txn.delete(tables.log, key: key) else { throw LogError.missing(sequence: sequence) }
            }
            guard let lastHash else { throw LogError.missing(sequence: last) }
            try txn.put(tables.meta, key: Self.metaRetainedFrom, value: BigEndian.bytes(last + 1) + lastHash)
            return (Int(last - base.sequence), LogHead(sequence: last, hash: lastHash))
        }
        state.withLock { state in
            if base.sequence > state.retainedBase.sequence { state.retainedBase = base }
        }
        return dropped
    }
}
