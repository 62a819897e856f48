import CumulusModel

/// Which records of one zone a share lets a user see, and what they may do with
/// them (`Docs/DATA-MODEL.md`, "Sharing"): a zone-wide share opens every record; a
/// hierarchy share opens its root and whatever reaches the root through `parent`
/// references (never through other references). The share record itself is open to
/// whoever the share opens to.
///
/// Built from the shares of the zone as one snapshot (or one plan) sees them, so an
/// answer is always the access of one commit.
struct ShareScope {
    /// Longest `parent` chain followed: deeper records are treated as outside (a
    /// guard against cycles and hostile data, far beyond any real hierarchy).
    static let maxDepth = 1_000

    let user: String
    let shares: [Share]
    private let byRoot: [String: Share]
    private let zoneWide: Share?

    init(user: String, shares: [Share]) {
        self.user = user
        self.shares = shares
        zoneWide = shares.first { $0.isZoneWide }
        var byRoot: [String: Share] = [:]
        for share in shares { if let root = share.rootRecordName { byRoot[root] = share } }
        self.byRoot = byRoot
    }

    /// Whether any share of the zone is open to the user at all.
    var isOpen: Bool { shares.contains { $0.access(for: user) != nil } }

    /// The share that governs `record`, if any: the zone-wide one, the share it is,
    /// or the share rooted at it or its nearest shared ancestor. `parentOf` reads a
    /// record's parent name (nil: none, or the record does not exist).
    func governingShare(of record: Record, parentOf: (String) throws -> String?) throws -> Share? {
        if Share.isShareType(record.recordType) {
            return shares.first { $0.recordName == record.recordID.recordName }
        }
        if let zoneWide { return zoneWide }
        guard !byRoot.isEmpty else { return nil }
        var name = record.recordID.recordName
        var next = record.parent.flatMap { $0.recordID.zoneID == record.recordID.zoneID ? $0.recordID.recordName : nil }
        var seen: Set<String> = [name]
        for _ in 0..<Self.maxDepth {
            if let share = byRoot[name] { return share }
            guard let parent = next, seen.insert(parent).inserted else { return nil }
            name = parent
            next = try parentOf(parent)
        }
        return nil
    }

    /// What the user may do with `record`: `nil` when it is not shared with them.
    func access(to record: Record, parentOf: (String) throws -> String?) throws -> SharePermission? {
        try governingShare(of: record, parentOf: parentOf)?.access(for: user)
    }
}
