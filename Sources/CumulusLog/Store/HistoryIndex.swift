import Crypto
import CumulusModel
import CumulusStorage

/// The per-record version index: for every record, the commits whose events touch
/// it, so `history`, `show --at` and `diff` take time proportional to one record's
/// versions instead of to the log (`Docs/LOG-FORMAT.md` §15).
///
/// ```
/// recordHistory  zoneKey(16) ‖ name ‖ u64 sequence   → varint n ‖ n × varint event index
/// name           u8 length (1…254) ‖ record name bytes
///                | 0 (the zone itself: zoneSaved / zoneDeleted events)
///                | 0xFF ‖ SHA-256(record name) (names longer than 254 bytes)
/// meta "historyIndex" → u8 1 once the index covers the whole log
/// ```
///
/// Like the feeds it is derived from the commits alone and written in the same
/// transaction as the frame (``AppendSession``), so the leader's own commits and a
/// follower's `appendFrame` both keep it. A log created before the index existed has
/// no `historyIndex` marker: opening it writable builds the index from the log
/// (``backfillIfNeeded(_:)``); read-only opens use it only when the marker is there.
struct HistoryIndex: Sendable {
    let table: LMDBTable
    let meta: LMDBTable

    /// The `meta` key marking the index complete.
    static let markerKey: [UInt8] = Array("historyIndex".utf8)
    /// Commits indexed per write transaction by the backfill.
    static let backfillBatch: UInt64 = 5_000

    /// Opens the table; `nil` when the environment is read-only and the log predates it.
    static func open(in environment: LMDBEnvironment, meta: LMDBTable) throws -> HistoryIndex? {
        guard environment.options.readOnly else {
            return HistoryIndex(table: try DataLayout.open(.recordHistory, in: environment), meta: meta)
        }
        // A read-only environment cannot create the table; a log without it has no index.
        guard let table = try? DataLayout.open(.recordHistory, in: environment) else { return nil }
        return HistoryIndex(table: table, meta: meta)
    }

    /// The key prefix of one record's entries (or, for `nil`, of the zone's own).
    static func prefix(zoneKey: [UInt8], recordName: String?) -> [UInt8] {
        var key = zoneKey
        guard let recordName else {
            key.append(0)
            return key
        }
        let bytes = Array(recordName.utf8)
        if bytes.count >= 1 && bytes.count <= 254 {
            key.reserveCapacity(zoneKey.count + 1 + bytes.count + 8)
            key.append(UInt8(bytes.count))
            key.append(contentsOf: bytes)
        } else {
            // Valid names are 1–255 ASCII bytes; anything else still gets a bounded key.
            key.append(0xFF)
            key.append(contentsOf: SHA256.hash(data: bytes))
        }
        return key
    }

    /// Writes `commit`'s entries. Events of one record in one commit share an entry.
    func index(_ commit: Commit, keys: FeedKeyCache, in txn: LMDBWriteTransaction) throws {
        // Most commits touch one record once: no grouping needed.
        if commit.events.count == 1, let prefix = Self.entryPrefix(commit.events[0], keys: keys) {
            try put(prefix, commit.sequence, [0], txn)
            return
        }
        // Grouped by sorting (prefix, then event index), not in a dictionary keyed by
        // byte arrays: hashing and growing that was a tenth of appending a 400-record
        // commit, and the entries now go to LMDB in key order.
        var entries: [(prefix: [UInt8], index: Int)] = []
        entries.reserveCapacity(commit.events.count)
        for (index, event) in commit.events.enumerated() {
            guard let prefix = Self.entryPrefix(event, keys: keys) else { continue }
            entries.append((prefix, index))
        }
        entries.sort { lhs, rhs in
            let order = UTF8Order.compare(lhs.prefix, rhs.prefix)
            return order != 0 ? order < 0 : lhs.index < rhs.index
        }
        var start = 0
        var group: [Int] = []
        while start < entries.count {
            group.removeAll(keepingCapacity: true)
            group.append(entries[start].index)
            var end = start + 1
            while end < entries.count, entries[end].prefix == entries[start].prefix {
                group.append(entries[end].index)
                end += 1
            }
            try put(entries[start].prefix, commit.sequence, group, txn)
            start = end
        }
    }

    private func put(_ prefix: [UInt8], _ sequence: UInt64, _ events: [Int], _ txn: LMDBWriteTransaction) throws {
        var key = prefix
        BigEndian.append(sequence, to: &key)
        var value = BinaryWriter(capacity: 1 + events.count * 2)
        value.length(events.count)
        for index in events { value.length(index) }
        // Deferred: a batch's entries (a group of saves, a follower's or a replay's
        // thousands of commits, a cascade's 100,000 records) are scattered by record
        // name, and go to LMDB sorted, through one cursor, when the transaction commits.
        try txn.deferPut(table, key: key, value: value.bytes)
    }

    /// The prefix an event is indexed under, or `nil` for events of no record or zone.
    private static func entryPrefix(_ event: Event, keys: FeedKeyCache) -> [UInt8]? {
        switch event {
        case .recordSaved(let database, let record, _):
            prefix(zoneKey: keys.zone(database, record.recordID.zoneID), recordName: record.recordID.recordName)
        case .recordDeleted(let database, let id, _, _), .changeTagBumped(let database, let id, _, _):
            prefix(zoneKey: keys.zone(database, id.zoneID), recordName: id.recordName)
        case .zoneSaved(let database, let zone):
            prefix(zoneKey: keys.zone(database, zone.zoneID), recordName: nil)
        case .zoneDeleted(let database, let zoneID):
            prefix(zoneKey: keys.zone(database, zoneID), recordName: nil)
        case .subscriptionSaved, .subscriptionDeleted, .dictionaryInstalled, .schemaChanged, .schemaExtended,
            .rolesAssigned, .epochBegan, .shareSaved, .shareDeleted:
            nil
        }
    }

    /// Whether the index covers the whole log, as `txn` sees it.
    func isComplete(in txn: LMDBReadTransaction) throws -> Bool {
        try txn.get(meta, key: Self.markerKey) == [1]
    }

    /// Builds the index from the log when it is not marked complete (a log written
    /// before the index existed), in batches; then marks it. Entries are idempotent
    /// puts, so an interrupted backfill simply runs again on the next open.
    /// Marks the index complete without building it: views made afresh, which
    /// catching up fills from the first commit on.
    func markComplete(in environment: LMDBEnvironment) throws {
        try environment.write { txn in try txn.put(meta, key: Self.markerKey, value: [UInt8(1)]) }
    }

    func backfillIfNeeded(_ store: LogStore) throws {
        guard !store.environment.options.readOnly else { return }
        if try store.environment.read({ try isComplete(in: $0) }) { return }
        try store.replayInBatches(through: try store.lastSequence(), batchSize: Int(Self.backfillBatch), into: store.environment) {
            batch, txn in
            for commit in batch { try index(commit, keys: store.feeds.keys, in: txn) }
        }
        try markComplete(in: store.environment)
    }

    /// The entries under `prefix` (one record's, or a zone's own), in sequence order,
    /// through `through`.
    func entries(prefix: [UInt8], through: UInt64, in txn: LMDBReadTransaction) throws -> [HistoryEntry] {
        var result: [HistoryEntry] = []
        let end = through == .max ? OrderedEncoding.prefixUpperBound(prefix) : prefix + BigEndian.bytes(through + 1)
        try txn.scan(table, from: prefix, to: end) { key, value in
            guard key.count == prefix.count + 8,
                let sequence = BigEndian.decode(UInt64.self, from: UnsafeRawBufferPointer(rebasing: key[prefix.count...]))
            else { throw LogError.storage("malformed record history key") }
            var reader = BinaryReader(value, context: "record history entry")
            var events: [Int] = []
            for _ in 0..<(try reader.length()) {
                let index = try reader.varint()
                guard index <= UInt64(Int32.max) else { throw reader.failure("event index out of range") }
                events.append(Int(index))
            }
            result.append(HistoryEntry(sequence: sequence, eventIndexes: events))
            return true
        }
        return result
    }

    /// The names of every record that ever had an entry in the zone `zoneKey`.
    func recordNames(zoneKey: [UInt8], in txn: LMDBReadTransaction) throws -> [String] {
        var names: [String] = []
        var start = zoneKey + [1]
        let end = zoneKey + [0xFF]
        while true {
            var found: [UInt8]?
            try txn.scan(table, from: start, to: end) { key, _ in
                found = Array(key)
                return false
            }
            guard let key = found, key.count > zoneKey.count + 1 else { break }
            let length = Int(key[zoneKey.count])
            guard key.count >= zoneKey.count + 1 + length + 8 else { throw LogError.storage("malformed record history key") }
            let nameBytes = key[(zoneKey.count + 1)..<(zoneKey.count + 1 + length)]
            names.append(String(decoding: nameBytes, as: UTF8.self))
            // Skip the rest of this record's entries.
            start = OrderedEncoding.prefixUpperBound(Array(key[..<(zoneKey.count + 1 + length)])) ?? end
        }
        return names
    }
}

/// One commit touching a record (or a zone), from the record history index.
public struct HistoryEntry: Sendable, Hashable {
    /// The commit's sequence.
    public var sequence: UInt64
    /// Which of the commit's events touch it, in order.
    public var eventIndexes: [Int]

    /// An entry.
    public init(sequence: UInt64, eventIndexes: [Int]) {
        self.sequence = sequence
        self.eventIndexes = eventIndexes
    }
}
