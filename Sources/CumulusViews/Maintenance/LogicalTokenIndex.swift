import CumulusLog
import CumulusModel
import CumulusStorage

/// The token index as token queries see it: `tokenIndex`'s postings with every entry
/// of `tokenPending` applied (``PendingTokens``), what `verify` and digests compare.
///
/// Which entries are still pending depends on when merges ran, and that is not the
/// log's to say: a directory whose commits were applied before delete markers existed
/// wrote a cascade's deletes directly, where a rebuild today stages them and merges
/// them over later commits. Both answer every query alike, and so are equal here, as
/// which postings share a block already is (``ViewDigest``).
///
/// An entry that takes out a posting the index lacks, or adds one it already holds,
/// disagrees with the index (a rebuild never does): the key is passed as damaged, so
/// the damage shows in a digest even though a merge would hide it.
struct LogicalTokenIndex {
    /// The postings pending entries take out of `tokenIndex` (their indexed sides'
    /// keys not in their current sides), sorted.
    private var removed: [[UInt8]] = []
    /// The postings they add (current sides' keys not in indexed sides), sorted.
    private var added: [[UInt8]] = []
    private let tokenIndex: LMDBTable

    /// Reads every pending entry of `tables` in `txn`; a malformed one is `corrupt`.
    init(_ tables: ViewTables, in txn: LMDBReadTransaction) throws {
        tokenIndex = tables.tokenIndex
        var removed: [[UInt8]] = []
        var added: [[UInt8]] = []
        try txn.scan(tables.tokenPending, prefix: []) { key, value in
            guard key.count > FeedKeys.length else { throw StorageError.corrupt("tokenPending key \(Hex.encode(Array(key)))") }
            let (indexed, current) = try PendingTokens.sides(of: value, key: key)
            let zoneKey = key.prefix(FeedKeys.length)
            let name = key.dropFirst(FeedKeys.length)
            let old = indexed.indexKeys(zoneKey: zoneKey, name: name)
            let new = current.indexKeys(zoneKey: zoneKey, name: name)
            // Both sorted and unique: one merge walk splits them.
            var i = 0
            var j = 0
            while i < old.count || j < new.count {
                if j == new.count || (i < old.count && old[i].lexicographicallyPrecedes(new[j])) {
                    removed.append(old[i])
                    i += 1
                } else if i == old.count || new[j].lexicographicallyPrecedes(old[i]) {
                    added.append(new[j])
                    j += 1
                } else {
                    i += 1
                    j += 1
                }
            }
            return true
        }
        // Keys of different records never collide (each ends with its record's name).
        self.removed = removed.sorted { $0.lexicographicallyPrecedes($1) }
        self.added = added.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Calls `body` with each logical key not below `start`, in key order, and whether
    /// the pending entries and the index disagree about it, until `body` returns `false`.
    func forEach(
        from start: [UInt8]?, in txn: LMDBReadTransaction, _ body: (_ key: [UInt8], _ damaged: Bool) throws -> Bool
    ) throws {
        func firstIndex(_ keys: [[UInt8]]) -> Int {
            guard let start else { return 0 }
            var low = 0
            var high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if keys[middle].lexicographicallyPrecedes(start) { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var i = firstIndex(removed)
        var j = firstIndex(added)
        var going = true
        // Emits the pending keys below `key` (all of them when it is nil).
        func pendingBelow(_ key: [UInt8]?) throws {
            func below(_ candidate: [UInt8]) -> Bool { key.map { candidate.lexicographicallyPrecedes($0) } ?? true }
            while going {
                let nextAdded = j < added.count && below(added[j])
                let nextRemoved = i < removed.count && below(removed[i])
                guard nextAdded || nextRemoved else { return }
                if nextAdded && (!nextRemoved || added[j].lexicographicallyPrecedes(removed[i])) {
                    going = try body(added[j], false)
                    j += 1
                } else {
                    // Taken out of the index, which never held it.
                    going = try body(removed[i], true)
                    i += 1
                }
            }
        }
        try txn.scanLogicalKeys(tokenIndex, from: start) { buffer in
            let key = Array(buffer)
            try pendingBelow(key)
            guard going else { return false }
            if j < added.count, added[j] == key {
                // Added by an entry, yet already in the index.
                j += 1
                going = try body(key, true)
            } else if i < removed.count, removed[i] == key {
                i += 1  // taken out
            } else {
                going = try body(key, false)
            }
            return going
        }
        try pendingBelow(nil)
    }
}
