import CumulusModel
import CumulusStorage

/// What the operator tools read beyond commits: the record history index, the zones
/// the log has seen, and commits with their chain hashes.
extension LogStore {
    /// Whether the record history index covers the whole log (see ``HistoryIndex``).
    /// `false` for a log written before the index existed and opened read-only since;
    /// opening it writable once (e.g. `cumulus rebuild`) builds the index.
    public func hasRecordHistory() throws -> Bool {
        guard let history else { return false }
        return try environment.read { try history.isComplete(in: $0) }
    }

    private func requireHistory() throws -> HistoryIndex {
        guard let history, try environment.read({ try history.isComplete(in: $0) }) else {
            throw CumulusError(
                .invalidArguments,
                "\(environment.path) has no record history index yet (it predates it); open it writable once, "
                    + "e.g. `cumulus rebuild --data \(environment.path)`, to build it")
        }
        return history
    }

    /// The commits touching record `recordID` of `database`, through `through`, in
    /// order: saves, deletes (any cause) and change-tag bumps. Time proportional to
    /// the record's versions.
    public func recordHistory(_ database: DatabaseID, _ recordID: RecordID, through: UInt64 = .max) throws
        -> [HistoryEntry]
    {
        let history = try requireHistory()
        let prefix = HistoryIndex.prefix(
            zoneKey: FeedKeys.zone(database, recordID.zoneID), recordName: recordID.recordName)
        return try environment.read { try history.entries(prefix: prefix, through: through, in: $0) }
    }

    /// The commits that saved or deleted the zone itself, through `through`, in order.
    public func zoneHistory(_ database: DatabaseID, _ zoneID: ZoneID, through: UInt64 = .max) throws -> [HistoryEntry] {
        let history = try requireHistory()
        let prefix = HistoryIndex.prefix(zoneKey: FeedKeys.zone(database, zoneID), recordName: nil)
        return try environment.read { try history.entries(prefix: prefix, through: through, in: $0) }
    }

    /// The name of every record that ever existed in a zone, in byte order.
    public func recordNamesEverIn(_ database: DatabaseID, _ zoneID: ZoneID) throws -> [String] {
        let history = try requireHistory()
        let zoneKey = FeedKeys.zone(database, zoneID)
        return try environment.read { try history.recordNames(zoneKey: zoneKey, in: $0) }
    }

    /// Every (database, zone) any commit ever touched, from the zone feed heads.
    public func zonesEverTouched() throws -> [ZoneKey] {
        try environment.read { txn in
            var zones: [ZoneKey] = []
            try txn.scan(feeds.zoneHeads) { _, value in
                var reader = BinaryReader(value, context: "zone head")
                _ = try reader.u64()
                zones.append(ZoneKey(try reader.databaseID(), try reader.zoneID()))
                return true
            }
            return zones.sorted()
        }
    }

    /// The commits at `sequences` (any order), read in one snapshot; a missing
    /// sequence throws ``LogError/missing(sequence:)``.
    public func commits(at sequences: [UInt64]) throws -> [Commit] {
        try logEnvironment.read { txn in
            try sequences.map { sequence in
                let commit = try txn.withValue(tables.log, key: BigEndian.bytes(sequence)) { buffer in
                    try decodeCommit(FrameView(parsing: buffer, expectedSequence: sequence))
                }
                guard let commit else {
                    try checkRetained(sequence, in: txn)
                    throw LogError.missing(sequence: sequence)
                }
                return commit
            }
        }
    }

    /// Like ``commitViews(from:through:_:)``, with each commit's chain hash and its
    /// predecessor's (what an audit line cites). One read snapshot; each view is
    /// valid only during its call.
    public func commitViewsWithHashes(
        from: UInt64, through: UInt64 = .max,
        _ body: (_ commit: CommitView, _ hash: [UInt8], _ previousHash: [UInt8]) throws -> Bool
    ) throws {
        let start = max(from, 1)
        guard start <= through else { return }
        let end: [UInt8]? = through == .max ? nil : BigEndian.bytes(through + 1)
        try logEnvironment.read { txn in
            try checkRetained(start, in: txn)
            var previous = LogHead.genesisHash
            let base = try Self.readRetainedBase(tables.meta, in: txn)
            if start == base.sequence + 1 {
                previous = base.hash
            } else if start > 1 {
                guard let prior = try txn.withValue(tables.log, key: BigEndian.bytes(start - 1), { buffer in
                    Array(try FrameView(parsing: buffer, expectedSequence: start - 1).chainHash)
                }) else { throw LogError.missing(sequence: start - 1) }
                previous = prior
            }
            try txn.scan(tables.log, from: BigEndian.bytes(start), to: end) { key, value in
                guard let sequence = BigEndian.decode(UInt64.self, from: key) else {
                    throw LogError.storage("malformed log key")
                }
                let frame = try FrameView(parsing: value, expectedSequence: sequence)
                let hash = Array(frame.chainHash)
                defer { previous = hash }
                return try withCommitView(frame) { try body($0, hash, previous) }
            }
        }
    }

    /// Opens a log in an empty data directory whose views environment is `environment`
    /// that takes the identity (log ID and epoch) of another log, so a copy of a prefix
    /// of that log — a replayed data directory — is recognisably the same log. Refuses
    /// a directory that already holds a log.
    public static func emptyCopy(in environment: LMDBEnvironment, logID: [UInt8], epoch: UInt64) throws -> LogStore {
        let log = try DataLayout.openLogEnvironment(of: environment)
        let meta = try DataLayout.open(.meta, in: log)
        guard try log.read({ try $0.get(meta, key: metaLogID) }) == nil else {
            throw LogError.storage("\(environment.path) already holds a log")
        }
        try seedIdentity(Identity(logID: logID, epoch: epoch), in: log)
        return try LogStore(logEnvironment: log, viewsEnvironment: environment)
    }
}
