import CumulusModel
import CumulusStorage

/// Appends commits to a ``LogStore`` inside one write transaction of its views
/// environment.
///
/// Obtained from ``LogStore/beginAppend(in:)``; valid only inside the transaction
/// it was begun in. Each append assigns the next global sequence and the next
/// position in every zone and database feed the commit touches, chains the hash,
/// compresses, writes the feed indexes and the record history into the views
/// transaction and holds the frame back. ``finish(in:)`` stores the feed heads and
/// the views' applied head and returns the frames; ``LogStore/commitLog(_:also:)``
/// makes them durable before the views transaction commits, and after both have
/// committed, hand the outcome to ``LogStore/didCommit(_:)``.
public struct AppendSession {
    /// A dictionary installed by a commit of this session.
    public struct Installed: Sendable {
        /// The ID frames name it by.
        public let id: UInt32
        /// The dictionary.
        public let dictionary: ZstdDictionary
        let compressor: ZstdCompressor
        /// Its bytes, as the log's `dictionaries` table stores them.
        let bytes: [UInt8]
        /// The commit that installed it.
        let sequence: UInt64
    }

    /// A frame held back for the log environment.
    public struct PendingFrame: Sendable {
        /// Its sequence, the log's key.
        public let sequence: UInt64
        /// The frame as stored.
        public let bytes: [UInt8]
    }

    /// What a finished session changed: the log's writes, and what to publish once
    /// both transactions have committed.
    public struct Outcome: Sendable {
        /// The new head.
        public let head: LogHead
        /// Dictionaries installed, in order; the last is now current.
        public let installed: [Installed]
        /// The frames appended, in order: empty when the session only caught views up
        /// with frames the log already holds.
        public let frames: [PendingFrame]
        /// Epochs begun by the session's commits.
        let epochStarts: [LogStore.EpochStart]
    }

    let store: LogStore
    /// The head as of the last append.
    public private(set) var head: LogHead
    var current: LogStore.CurrentDictionary?
    var installed: [Installed] = []
    /// Bytes of commits appended so far (uncompressed), for batch size limits.
    public private(set) var appendedBytes = 0
    /// The feed heads advanced so far, stored by ``finish(in:)``.
    var heads = FeedIndex.PendingHeads()
    /// Frames for the log environment, unless the session catches views up.
    var frames: [PendingFrame] = []
    var epochStarts: [LogStore.EpochStart] = []
    /// Whether the frames are the log's already (catching the views up to it).
    let indexOnly: Bool

    init(store: LogStore, head: LogHead, current: LogStore.CurrentDictionary?, indexOnly: Bool = false) {
        self.store = store
        self.indexOnly = indexOnly
        self.head = head
        self.current = current
    }

    /// Appends one commit made from `request`, stamped `now` unless the request
    /// carries its own time, and returns it as stored.
    public mutating func append(_ request: CommitRequest, now: Timestamp, in txn: LMDBWriteTransaction) throws
        -> (commit: Commit, bytes: [UInt8])
    {
        let events = request.events.map(\.canonical)
        let positions = try store.feeds.positions(for: events, pending: heads, in: txn)
        let commit = Commit(
            sequence: head.sequence + 1, timestamp: request.timestamp ?? now, actor: request.actor,
            requestID: request.requestID, clientChangeTokenData: request.clientChangeTokenData,
            events: events, zoneSequences: positions.zones, databaseSequences: positions.databases)
        let bytes = try CommitCodec.encode(commit)
        try Self.checkCommitLength(bytes.count)
        let hash = LogStore.chainHash(previous: head.hash, commitBytes: bytes)
        let frame = try compress(commit.sequence, bytes, hash)
        try store(commit, positions, frameBytes: frame.encoded(), hash: hash, in: txn)
        appendedBytes += bytes.count
        return (commit, bytes)
    }

    /// Refuses, with `limitExceeded`, a commit of `length` bytes that no log could read
    /// back nor a follower receive (``Frame/maxUncompressedLength``). The largest
    /// operation allowed (400 records of 1 MiB; `Docs/DATA-MODEL.md`, "Limits") fits; what does not
    /// is a cascade of millions of deletes, which must be split into several operations.
    static func checkCommitLength(_ length: Int) throws(CumulusError) {
        guard length <= Frame.maxUncompressedLength else {
            throw CumulusError(
                .limitExceeded,
                "the operation encodes to a commit of \(length) bytes; the limit is \(Frame.maxUncompressedLength). "
                    + "Split it into smaller operations")
        }
    }

    /// Appends a frame made by another log (a follower applying its leader's
    /// stream), stored byte for byte. Refuses — without writing anything — a frame
    /// that is damaged, is not the next sequence, does not chain from the head, or
    /// whose feed positions differ from the ones this log would assign.
    public mutating func appendFrame(_ frameBytes: [UInt8], in txn: LMDBWriteTransaction) throws -> Commit {
        let expected = head.sequence + 1
        let frame: Frame
        do {
            frame = try Frame(parsing: frameBytes, expectedSequence: nil)
        } catch LogError.corruptFrame(_, let reason) {
            // A damaged header cannot say its own sequence: name the one expected.
            throw LogError.corruptFrame(sequence: expected, reason: reason)
        }
        guard frame.sequence == expected else {
            throw LogError.doesNotContinue(expected: expected, got: frame.sequence, reason: "out of order")
        }
        var extra: [UInt32: ZstdDictionary] = [:]
        for item in installed { extra[item.id] = item.dictionary }
        let (commit, bytes) = try store.decodeCommit(frame, extraDictionaries: extra)
        try appendChecked(frame, commit, commitBytes: bytes, frameBytes: frameBytes, in: txn)
        return commit
    }

    /// ``appendFrame(_:in:)`` for a frame decoded ahead of this transaction
    /// (``FrameDecoder``): the same checks against the head, without decoding again.
    public mutating func appendFrame(_ decoded: DecodedFrame, in txn: LMDBWriteTransaction) throws -> Commit {
        let expected = head.sequence + 1
        guard decoded.frame.sequence == expected else {
            throw LogError.doesNotContinue(expected: expected, got: decoded.frame.sequence, reason: "out of order")
        }
        try appendChecked(
            decoded.frame, decoded.commit, commitBytes: decoded.commitBytes, frameBytes: decoded.bytes,
            chainsFrom: decoded.chainsFrom, in: txn)
        return decoded.commit
    }

    /// Checks that the decoded `frame` (the next sequence) chains from the head and
    /// takes the feed positions this log would assign, then stores it. `chainsFrom`:
    /// the hash the frame was already found to chain from, if any.
    private mutating func appendChecked(
        _ frame: Frame, _ commit: Commit, commitBytes bytes: [UInt8], frameBytes: [UInt8], chainsFrom: [UInt8]? = nil,
        in txn: LMDBWriteTransaction
    ) throws {
        let expected = head.sequence + 1
        let chains = chainsFrom.map { $0 == head.hash } == true
            || LogStore.chainHash(previous: head.hash, commitBytes: bytes) == frame.chainHash
        guard chains else {
            throw LogError.doesNotContinue(expected: expected, got: frame.sequence, reason: "chain hash does not follow")
        }
        try storeWithItsPositions(commit, frameBytes: frameBytes, hash: frame.chainHash, in: txn)
        appendedBytes += bytes.count
    }

    /// Stores a commit made by a log (another's, or this one's own frames) once the feed
    /// positions this log assigns are found to be the ones it carries.
    private mutating func storeWithItsPositions(
        _ commit: Commit, frameBytes: [UInt8], hash: [UInt8], in txn: LMDBWriteTransaction
    ) throws {
        let positions = try store.feeds.positions(for: commit.events, pending: heads, in: txn)
        guard positions.zones == commit.zoneSequences, positions.databases == commit.databaseSequences else {
            throw LogError.doesNotContinue(
                expected: head.sequence + 1, got: commit.sequence, reason: "feed positions differ from this log's")
        }
        try store(commit, positions, frameBytes: frameBytes, hash: hash, in: txn)
    }

    /// Indexes a commit the log already holds (catching the views up to it): the next
    /// sequence, with the feed positions this log assigns, as its stored frame says.
    /// The frame's chain hash is the log's own, taken as it is (`cumulus log verify`
    /// checks the chain), but the hash it follows from (`previous`, the frame before
    /// it) must be the head's: views of another log are refused. Only a session begun
    /// to catch up may index.
    mutating func index(
        _ commit: Commit, chainHash: [UInt8], following previous: [UInt8], in txn: LMDBWriteTransaction
    ) throws {
        guard indexOnly else { throw LogError.storage("indexing a stored commit in a session that appends") }
        let expected = head.sequence + 1
        guard commit.sequence == expected else {
            throw LogError.doesNotContinue(expected: expected, got: commit.sequence, reason: "out of order")
        }
        guard previous == head.hash else {
            throw LogError.doesNotContinue(expected: expected, got: commit.sequence, reason: "chain hash does not follow")
        }
        try storeWithItsPositions(commit, frameBytes: [], hash: chainHash, in: txn)
    }

    /// Stores the feed heads and the views' applied head in `txn`; returns the frames
    /// for ``LogStore/commitLog(_:also:)`` and what to publish after both commit.
    public func finish(in txn: LMDBWriteTransaction) throws -> Outcome {
        try store.feeds.write(heads, in: txn)
        try txn.put(store.tables.viewsState, key: LogStore.viewsApplied, value: BigEndian.bytes(head.sequence) + head.hash)
        return Outcome(head: head, installed: installed, frames: frames, epochStarts: epochStarts)
    }

    private func compress(_ sequence: UInt64, _ bytes: [UInt8], _ hash: [UInt8]) throws -> Frame {
        let compressor = current?.compressor ?? store.plainCompressor
        let payload = try compressor.compress(bytes)
        // Incompressible commits (mostly random bytes) are stored raw.
        if payload.count >= bytes.count {
            return Frame(
                sequence: sequence, dictionaryID: 0, isCompressed: false, uncompressedLength: bytes.count,
                chainHash: hash, payload: bytes)
        }
        return Frame(
            sequence: sequence, dictionaryID: current?.id ?? 0, isCompressed: true, uncompressedLength: bytes.count,
            chainHash: hash, payload: payload)
    }

    private mutating func store(
        _ commit: Commit, _ positions: FeedIndex.Positions, frameBytes: [UInt8], hash: [UInt8],
        in txn: LMDBWriteTransaction
    ) throws {
        if !indexOnly { frames.append(PendingFrame(sequence: commit.sequence, bytes: frameBytes)) }
        try store.feeds.index(commit, positions: positions, pending: &heads, in: txn)
        try store.history?.index(commit, keys: store.feeds.keys, in: txn)
        for event in commit.events {
            if case .epochBegan(let epoch) = event {
                if let last = epochStarts.last, last.epoch >= epoch {
                    throw LogError.corruptFrame(
                        sequence: commit.sequence, reason: "epoch \(epoch) begins after epoch \(last.epoch) began at \(last.sequence)")
                }
                epochStarts.append(LogStore.EpochStart(epoch: epoch, sequence: commit.sequence))
                continue
            }
            guard case .dictionaryInstalled(let id, let bytes) = event else { continue }
            guard id != 0 else { throw LogError.corruptFrame(sequence: commit.sequence, reason: "dictionary ID 0") }
            if let known = store.dictionary(id) ?? installed.first(where: { $0.id == id })?.dictionary {
                guard known.bytes == bytes else {
                    throw LogError.corruptFrame(sequence: commit.sequence, reason: "dictionary \(id) installed twice")
                }
            }
            let dictionary = try ZstdDictionary(bytes: bytes)
            let compressor = try LogStore.compressor(for: dictionary)
            installed.append(Installed(id: id, dictionary: dictionary, compressor: compressor, bytes: bytes, sequence: commit.sequence))
            current = LogStore.CurrentDictionary(id: id, compressor: compressor)
        }
        head = LogHead(sequence: commit.sequence, hash: hash)
    }
}
