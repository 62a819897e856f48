import CumulusLog
import CumulusModel
import CumulusStorage

/// Asset reference counts (issue 17): which stored files the current records hold
/// (`assetsOut`), and per file how many current records hold it and the last commit
/// that saved a version holding it (`assetRefs`).
///
/// The two numbers are what collection needs (``AssetReferences/isReachable(retainedFrom:)``):
/// a file no current record holds may still be held by an older version the retained
/// log can reach (history, time travel, a follower catching up), and such a version
/// exists exactly when the last commit that saved one is still retained. One number per
/// file answers that, where counting every version would mean decoding each frame
/// retention drops.
///
/// Checksums that are not 64 lower-case hex digits name no file this server stores
/// (records saved before assets were stored) and are not counted.
extension Views {
    /// Counts the assets of `record`, just saved by commit `sequence`, in place of what
    /// its previous version held (`nil`: it was deleted). Without `existed` there was no
    /// previous version, so nothing is read for it. Returns how many bytes of files the
    /// previous version and the new one hold (each file once), for ``RecordUsage``.
    @discardableResult
    func updateAssets(
        zoneKey: [UInt8], name: String, to record: Record?, existed: Bool = true, sequence: UInt64,
        _ txn: LMDBWriteTransaction
    ) throws -> (old: Int64, new: Int64) {
        let key = ViewKeys.record(zoneKey, name)
        let old = existed ? try txn.withValue(tables.assetsOut, key: key) { Self.heldAssets(in: $0) } ?? [] : []
        var new: [AssetChecksum: Int64] = [:]
        record?.forEachFieldAsset { asset in
            if let checksum = AssetChecksum(hex: asset.fileChecksum) { new[checksum] = max(0, asset.size) }
        }
        guard !old.isEmpty || !new.isEmpty else { return (0, 0) }
        let oldSet = Set(old.map(\.checksum))
        for held in old where new[held.checksum] == nil {
            try adjust(held.checksum, by: -1, savedAt: nil, txn)
        }
        for checksum in new.keys {
            try adjust(checksum, by: oldSet.contains(checksum) ? 0 : 1, savedAt: sequence, txn)
        }
        if new.isEmpty {
            _ = try txn.delete(tables.assetsOut, key: key)
        } else {
            var value: [UInt8] = []
            value.reserveCapacity(new.count * Self.heldAssetLength)
            for (checksum, size) in new.sorted(by: { $0.key < $1.key }) {
                value += checksum.bytes
                BigEndian.append(UInt64(size), to: &value)
            }
            try txn.put(tables.assetsOut, key: key, value: value)
        }
        return (old.reduce(0) { $0 + $1.size }, new.values.reduce(0, +))
    }

    /// Counts down every asset the records of a deleted zone held (its `assetsOut`
    /// rows go with the zone's other ranges, `Views.dropZoneEntries`).
    func dropAssets(ofZone zoneKey: [UInt8], _ txn: LMDBWriteTransaction) throws {
        var held: [AssetChecksum] = []
        try txn.scan(tables.assetsOut, prefix: zoneKey) { _, value in
            held += Self.heldAssets(in: value).map(\.checksum)
            return true
        }
        for checksum in held { try adjust(checksum, by: -1, savedAt: nil, txn) }
    }

    /// Moves `checksum`'s count by `delta` and, with `savedAt`, its last saving commit.
    private func adjust(_ checksum: AssetChecksum, by delta: Int, savedAt sequence: UInt64?, _ txn: LMDBWriteTransaction) throws {
        let current = try assetReferences(checksum, in: txn) ?? AssetReferences(count: 0, lastSaved: 0)
        let count = delta < 0 ? current.count - min(current.count, UInt64(-delta)) : current.count + UInt64(delta)
        var value = BigEndian.bytes(count)
        BigEndian.append(sequence ?? current.lastSaved, to: &value)
        try txn.put(tables.assetRefs, key: checksum.bytes, value: value)
    }

    /// One `assetsOut` entry's length: the checksum and the file's size.
    static let heldAssetLength = AssetChecksum.byteCount + 8

    /// The files of an `assetsOut` value with their sizes (a malformed tail is ignored:
    /// the value is this module's own).
    static func heldAssets(in value: UnsafeRawBufferPointer) -> [(checksum: AssetChecksum, size: Int64)] {
        stride(from: 0, to: value.count - value.count % heldAssetLength, by: heldAssetLength).compactMap { start in
            guard let checksum = AssetChecksum(bytes: Array(value[start..<(start + AssetChecksum.byteCount)])),
                let size = BigEndian.decode(UInt64.self, from: value, at: start + AssetChecksum.byteCount)
            else { return nil }
            return (checksum, Int64(clamping: size))
        }
    }

    // MARK: - Reading

    /// What the views know of the file `checksum`, or `nil` if no record version
    /// saved since the views were built held it.
    public func assetReferences(_ checksum: AssetChecksum, in txn: LMDBReadTransaction) throws -> AssetReferences? {
        try txn.withValue(tables.assetRefs, key: checksum.bytes) { value -> AssetReferences? in
            guard let count = BigEndian.decode(UInt64.self, from: value),
                let last = BigEndian.decode(UInt64.self, from: value, at: 8)
            else { return nil }
            return AssetReferences(count: count, lastSaved: last)
        } ?? nil
    }

    /// Calls `body` with every file any record version held, in checksum order, until
    /// it returns `false`.
    public func forEachAssetReference(
        in txn: LMDBReadTransaction, _ body: (AssetChecksum, AssetReferences) throws -> Bool
    ) throws {
        try txn.scan(tables.assetRefs, prefix: []) { key, value in
            guard let checksum = AssetChecksum(bytes: Array(key)),
                let count = BigEndian.decode(UInt64.self, from: value),
                let last = BigEndian.decode(UInt64.self, from: value, at: 8)
            else { return true }
            return try body(checksum, AssetReferences(count: count, lastSaved: last))
        }
    }

    /// Every file a record version the log holds from `retainedFrom` on can reach
    /// (``AssetReferences/isReachable(retainedFrom:)``), in checksum order: what a node
    /// must hold, what `verify` checks, what a seeded follower fetches.
    public func reachableAssets(retainedFrom: UInt64, in txn: LMDBReadTransaction) throws -> [AssetChecksum] {
        var found: [AssetChecksum] = []
        try forEachAssetReference(in: txn) { checksum, references in
            if references.isReachable(retainedFrom: retainedFrom) { found.append(checksum) }
            return true
        }
        return found
    }

    /// The name of a current record holding `checksum`, or `nil`: for messages that
    /// name an asset's owner. Walks `assetsOut`; for reports, not for hot paths.
    public func recordName(holding checksum: AssetChecksum, in txn: LMDBReadTransaction) throws -> String? {
        var found: String?
        try txn.scan(tables.assetsOut, prefix: []) { key, value in
            guard Self.heldAssets(in: value).contains(where: { $0.checksum == checksum }), key.count > FeedKeys.length else { return true }
            found = String(decoding: UnsafeRawBufferPointer(rebasing: key[FeedKeys.length...]), as: UTF8.self)
            return false
        }
        return found
    }
}
