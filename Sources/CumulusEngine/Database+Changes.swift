import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Change feeds (`Docs/DATA-MODEL.md`, "Change feeds"): what changed in a zone, or which zones changed in a
/// database, since a token. Served from the log's feed indexes, so the work is
/// proportional to what changed, not to the zone's size. Every zone has a feed —
/// the default zone and the public database included.
extension Database {
    /// Changes per page when the caller does not say.
    public static let defaultChangesLimit = 200
    /// Most changes per page.
    public static let maxChangesLimit = 1_000

    /// The records changed and deleted in `zoneID` since `token` (`nil`: since the
    /// zone's creation). A token this server did not issue, from another log, or from
    /// before the zone was deleted and re-created is `changeTokenExpired`. A token
    /// ahead of this node's log (a follower catching up) is waited on for up to
    /// `catchUpTimeout`, then refused as retryable. A page also ends once the records
    /// it reports as changed take `byteLimit` bytes as stored (with at least one
    /// change), so a page of large records does not build a response of gigabytes.
    public func fetchZoneChanges(
        _ zoneID: ZoneID, since token: ChangeToken? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        catchUpTimeout: Duration = .zero, byteLimit: Int = .max, as actor: String?
    ) async throws -> ZoneChanges {
        var changed: [Record] = []
        var changes = try await fetchZoneChanges(
            zoneID, since: token, resultsLimit: resultsLimit, desiredKeys: desiredKeys, catchUpTimeout: catchUpTimeout,
            byteLimit: byteLimit, as: actor
        ) { page in changed = try page.decodedRecords() }
        changes.changed = changed
        return changes
    }

    /// The same page, its changed records handed to `body` as they are stored
    /// (``StoredRecordPage``, valid only while `body` runs, inside the page's read);
    /// the result's ``ZoneChanges/changed`` is empty.
    public func fetchZoneChanges(
        _ zoneID: ZoneID, since token: ChangeToken? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        catchUpTimeout: Duration = .zero, byteLimit: Int = .max, as actor: String?,
        _ body: (StoredRecordPage) throws -> Void
    ) async throws -> ZoneChanges {
        try AccessPolicy.checkRead(id, actor: actor)
        let limit = try changesLimit(resultsLimit)
        let zone = Normalizer(database: id).zone(zoneID)
        let store = container.store
        let views = container.views
        // A shared zone's feed is its owner's; the token still names this database.
        let tokenDatabase = id
        let database = id.scope == .shared ? ownerDatabase(of: zone) : id
        let participant = id.scope == .shared ? actor : nil
        let secret = container.secret
        let zoneKey = views.zoneKeys.zone(database, zone)

        var start: (position: UInt64, offset: UInt32)?
        var incarnation: UInt64 = 0
        if let token {
            let contents = try openChangeToken(token, zone: zone)
            incarnation = contents.incarnation
            start = (contents.position, contents.offset)
            // Checked before waiting (a fork's position is not worth waiting for) and
            // after (a follower may learn only now where the token's epoch ended).
            try checkFork(contents, feedDatabase: database)
            try await waitUntilFeed(reaches: contents.position, timeout: catchUpTimeout) { txn in
                try store.zoneHead(database, zone, in: txn)
            }
            try checkFork(contents, feedDatabase: database)
        }
        let known = start
        let knownIncarnation = incarnation
        let desired = desiredKeys.map(Set.init)
        var deleted: [RecordDeletion] = []
        var commits: [UInt64: Commit] = [:]
        // One snapshot finds the page and builds the answer: each changed record is
        // looked up once, by the walk that counts its bytes, and its bytes are written
        // from there (they had been read again in a second transaction).
        let page = try store.environment.read { txn -> (next: (UInt64, UInt32), more: Bool, incarnation: UInt64, bytes: Int, clientToken: [UInt8]?) in
            if let participant { _ = try openSharedZone(zone, actor: participant, txn) }
            let current: UInt64
            if zone.isDefaultZone {
                guard database.scope != .shared else { throw CumulusError(.zoneNotFound, "the shared database has no default zone") }
                current = 0
            } else {
                guard let stored = try views.zone(zone, in: database, txn) else {
                    throw CumulusError(.zoneNotFound, "zone \(zone.zoneName) does not exist")
                }
                current = stored.incarnation
            }
            var from: (UInt64, UInt32)
            if let known {
                if let refusal = Self.incarnationRefusal(zone, token: knownIncarnation, current: current) { throw refusal }
                from = known
            } else {
                from = (try creationPosition(zone, of: database, incarnation: current, txn), 0)
            }
            return try views.withRecordsCursor(txn) { cursor in
                let find = { (name: String) in try views.storedRecord(zoneKey: zoneKey, name: name, cursor: cursor) }
                var walk = FeedWalk(limit: limit, byteLimit: byteLimit, find: find)
                var after = from.0
                let skip = from.1
                // Feed entries are read a few at a time, then more: each is decoded whole
                // (a name per change), and a page of 200 changes from commits of 400 had
                // decoded 256 of them, 100,000 names, for the one it used.
                var batch = 2
                outer: while true {
                    let entries = try store.zoneFeed(database, zone, after: after, limit: batch, in: txn)
                    batch = min(batch * 2, 256)
                    if entries.isEmpty { break }
                    for entry in entries {
                        let first = entry.zoneSequence == from.0 + 1 ? Int(skip) : 0
                        if try !walk.consume(entry.zoneSequence, entry.sequence, entry.changes, skipping: first) { break outer }
                        after = entry.zoneSequence
                    }
                }
                let more = walk.stopped
                // In the public database, records of types the caller may not read (the
                // schema's READ grants) are left out. A tombstone no longer says who created
                // the record, so one of a type only `_creator` reads is left out for everyone.
                let access = try ReadAccess(
                    views: views, database: database, schema: views.schema(SchemaID(database), in: txn), actor: actor, txn: txn)
                // Through the shared database: only what the shares open, as this snapshot has them.
                let shared = try participant.map { try openSharedZone(zone, actor: $0, txn) }
                var hints = RecordDecodeHints()
                var changed: [UnsafeRawBufferPointer] = []
                for item in walk.items {
                    let name = item.name
                    let recordID = RecordID(recordName: name, zoneID: zone)
                    switch item.state {
                    case .changed:
                        // A record changed again after this page (or deleted) is reported by
                        // the page that holds its last change, so a client paging through the
                        // history sees each record once, at its latest version.
                        guard let stored = try item.looked ? item.stored : find(name),
                            try !Self.changedAfter(stored: stored, walk.lastSequence), try access.denial(stored) == nil
                        else { continue }
                        // Share visibility is decided on the record (its parent chain).
                        if let shared {
                            hints.recordID = recordID
                            let record = try RecordCodec.decodeForReading(stored, hints: &hints)
                            if try isVisible(record, in: shared, txn) {
                                changed.append(stored)
                                continue
                            }
                            // Moved out of a shared hierarchy (its parent changed): for the
                            // participant it is gone, if the version before was theirs to see.
                            if let tag = record.recordChangeTag, let written = UInt64(tag, radix: 36),
                                try wasVisible(recordID, deletedAt: written, in: shared, txn)
                            {
                                deleted.append(RecordDeletion(recordID: recordID, recordType: record.recordType, cause: .direct))
                            }
                            continue
                        }
                        changed.append(stored)
                    case .deleted(let sequence):
                        // Re-created after this page: a later page reports it as changed.
                        if more, try views.recordExists(recordID, in: database, txn) { continue }
                        // A deletion whose commit retention dropped is reported without its
                        // type and cause (as `nil` below), rather than not at all.
                        if commits[sequence] == nil {
                            do { commits[sequence] = try store.read(sequence) } catch LogError.truncated {}
                        }
                        var type = ""
                        var cause = DeleteCause.direct
                        for case .recordDeleted(let db, let deletedID, let recordType, let why) in commits[sequence]?.events ?? []
                        where db == database && deletedID == recordID {
                            type = recordType
                            cause = why
                        }
                        // In the public database a tombstone whose type retention dropped is
                        // left out: whether the caller may read that type cannot be told.
                        guard database.scope != .public
                            || (!type.isEmpty && access.schema.allows(.read, on: type, roles: access.roles, actor: actor, creator: nil))
                        else { continue }
                        // A hierarchy share reports the deletions of records it opened.
                        if let shared, !shared.scope.shares.contains(where: \.isZoneWide),
                            try !wasVisible(recordID, deletedAt: sequence, in: shared, txn)
                        { continue }
                        deleted.append(RecordDeletion(recordID: recordID, recordType: type, cause: cause))
                    }
                }
                try body(StoredRecordPage(records: changed, desiredKeys: desired))
                let clientToken = try actor.flatMap { try views.clientChangeToken(zoneKey, actor: $0, in: txn) }
                return (walk.next ?? (after, 0), more, current, walk.bytes, clientToken)
            }
        }
        let next = ChangeToken.make(
            ChangeToken.Contents(
                kind: .zone, logID: store.logID, epoch: store.epoch, database: tokenDatabase, zoneID: zone,
                incarnation: page.incarnation, position: page.next.0, offset: page.next.1),
            secret: secret)
        return ZoneChanges(
            changed: [], deleted: deleted, token: next, moreComing: page.more, clientChangeTokenData: page.clientToken,
            storedBytes: page.bytes)
    }

    /// The zones changed and deleted in this database since `token` (`nil`: ever).
    public func fetchDatabaseChanges(
        since token: ChangeToken? = nil, resultsLimit: Int? = nil, catchUpTimeout: Duration = .zero, as actor: String?
    ) async throws -> DatabaseChanges {
        try AccessPolicy.checkRead(id, actor: actor)
        let limit = try changesLimit(resultsLimit)
        let store = container.store
        let views = container.views
        let database = id
        var from: (UInt64, UInt32) = (0, 0)
        if database.scope == .shared {
            return try await sharedDatabaseChanges(since: token, limit: limit, catchUpTimeout: catchUpTimeout)
        }
        if let token {
            let contents = try openChangeToken(token, zone: nil)
            from = (contents.position, contents.offset)
            // Before and after waiting, as for a zone's token.
            try checkFork(contents)
            try await waitUntilFeed(reaches: contents.position, timeout: catchUpTimeout) { txn in
                try store.databaseHead(database, in: txn)
            }
            try checkFork(contents)
        }
        let start = from
        let result = try store.environment.read { txn -> DatabaseChanges in
            var states: [ZoneID: Bool] = [:]  // true: changed, false: deleted
            var order: [ZoneID] = []
            var consumed = 0
            var after = start.0
            var next: (UInt64, UInt32)?
            outer: while true {
                let entries = try store.databaseFeed(database, after: after, limit: 256, in: txn)
                if entries.isEmpty { break }
                for entry in entries {
                    let skip = entry.databaseSequence == start.0 + 1 ? Int(start.1) : 0
                    for (index, change) in entry.changes.enumerated() where index >= skip {
                        if consumed == limit {
                            next = (entry.databaseSequence - 1, UInt32(index))
                            break outer
                        }
                        consumed += 1
                        switch change {
                        case .zoneChanged(let zone):
                            if states[zone] == nil { order.append(zone) }
                            states[zone] = true
                        case .zoneDeleted(let zone):
                            if states[zone] == nil { order.append(zone) }
                            states[zone] = false
                        case .databaseChanged:
                            break
                        }
                    }
                    after = entry.databaseSequence
                }
            }
            var changedZones: [ZoneID] = []
            var deletedZones: [ZoneID] = []
            for zone in order {
                if states[zone] == true {
                    if try zone.isDefaultZone || views.zone(zone, in: database, txn) != nil { changedZones.append(zone) }
                } else {
                    deletedZones.append(zone)
                }
            }
            let position = next ?? (after, 0)
            let token = ChangeToken.make(
                ChangeToken.Contents(
                    kind: .database, logID: store.logID, epoch: store.epoch, database: database, zoneID: nil,
                    incarnation: 0, position: position.0, offset: position.1),
                secret: container.secret)
            return DatabaseChanges(changedZones: changedZones, deletedZones: deletedZones, token: token, moreComing: next != nil)
        }
        return result
    }

    // MARK: - Helpers

    /// Opens a change token of this database: a zone token of `zone`, or a database
    /// token when `zone` is `nil`. `changeTokenExpired` for one this node cannot serve:
    /// another log, another database or zone, or an epoch it does not know.
    func openChangeToken(_ token: ChangeToken, zone: ZoneID?) throws -> ChangeToken.Contents {
        let contents = try token.open(secret: container.secret, expecting: zone == nil ? .database : .zone)
        try container.checkEpoch(ofToken: contents.epoch)
        try checkOrigin(contents, zone: zone)
        return contents
    }

    /// Refuses a token of another log, or of another database or zone than `zone` of
    /// this one (`nil`: a database token).
    func checkOrigin(_ contents: ChangeToken.Contents, zone: ZoneID?) throws {
        guard contents.logID == container.store.logID else {
            throw CumulusError(.changeTokenExpired, "the change token comes from another server's log; fetch again without a token")
        }
        guard contents.database == id, contents.zoneID == zone else {
            throw CumulusError(
                .changeTokenExpired,
                "the change token belongs to another \(zone == nil ? "database" : "zone"); fetch again without a token")
        }
    }

    /// Refuses a change token from a superseded leader's fork (``Container/checkFork``):
    /// the commit behind the last feed entry it covers, in its zone's feed or its
    /// database's, must lie within its epoch as this node's history has it.
    /// `feedDatabase` is the database whose feed the token walks, when not the one it
    /// names (a shared zone's token walks its owner's feed).
    func checkFork(_ contents: ChangeToken.Contents, feedDatabase: DatabaseID? = nil) throws {
        let store = container.store
        let database = feedDatabase ?? contents.database
        try container.checkFork(issuedIn: contents.epoch, "change token") { txn in
            try Container.lastCovered(position: contents.position, offset: contents.offset) { covered in
                if let zone = contents.zoneID {
                    return try store.zoneFeed(database, zone, after: covered - 1, limit: 1, in: txn).first
                        .map { ($0.zoneSequence, $0.sequence) }
                }
                return try store.databaseFeed(database, after: covered - 1, limit: 1, in: txn).first
                    .map { ($0.databaseSequence, $0.sequence) }
            }
        }
    }

    enum ChangeState {
        case changed
        case deleted(sequence: UInt64)
    }

    /// Accumulates feed changes into per-record states until the page is full: `limit`
    /// changes, or records of `byteLimit` stored bytes (at least one change).
    ///
    /// Lifetime: the buffers ``find`` returns, kept in ``items``, are borrowed from the
    /// read transaction the walk runs in; a walk does not outlive it.
    struct FeedWalk {
        /// One record the page touches, in the order the feed first named it.
        struct Item {
            let name: String
            var state: ChangeState
            /// The record's stored bytes, once looked up (``looked``): by the walk when it
            /// counts bytes, so the page's answer need not look again.
            var stored: UnsafeRawBufferPointer?
            var looked = false
        }

        let limit: Int
        let byteLimit: Int
        /// A record's stored bytes by name, looked up only when `byteLimit` is finite.
        let find: (String) throws -> UnsafeRawBufferPointer?
        /// Where each record's item is: one hash-table lookup a change (three were most
        /// of a 200-change page's walk).
        private var index: [String: Int] = [:]
        private(set) var items: [Item] = []
        var consumed = 0
        /// Stored bytes of the records this page reports as changed, each counted once.
        var bytes = 0
        var next: (UInt64, UInt32)?
        /// The global sequence of the last change consumed.
        var lastSequence: UInt64 = 0
        var stopped: Bool { next != nil }

        init(limit: Int, byteLimit: Int, find: @escaping (String) throws -> UnsafeRawBufferPointer?) {
            self.limit = limit
            self.byteLimit = byteLimit
            self.find = find
        }

        /// Consumes one entry's changes (after skipping `skip`); `false` once the page is full.
        mutating func consume(
            _ zoneSequence: UInt64, _ sequence: UInt64, _ changes: [ZoneFeedEntry.Change], skipping skip: Int
        ) throws -> Bool {
            for (offset, change) in changes.enumerated() where offset >= skip {
                let name: String
                let state: ChangeState
                switch change {
                case .saved(let recordName), .tagBumped(let recordName):
                    name = recordName
                    state = .changed
                case .deleted(let recordName):
                    name = recordName
                    state = .deleted(sequence: sequence)
                case .zoneSaved, .zoneDeleted:
                    continue
                }
                if consumed == limit || (consumed > 0 && bytes >= byteLimit) {
                    next = (zoneSequence - 1, UInt32(offset))
                    return false
                }
                consumed += 1
                lastSequence = sequence
                var isNew = false
                let at = Self.slot(&index[name, default: { isNew = true; return items.count }()])
                if isNew {
                    items.append(Item(name: name, state: state))
                } else {
                    items[at].state = state
                }
                if byteLimit < .max, case .changed = state, !items[at].looked {
                    items[at].looked = true
                    items[at].stored = try find(name)
                    bytes += items[at].stored?.count ?? 0
                }
            }
            return true
        }

        /// The slot an entry holds, inserting its default with the one hash of the
        /// subscript's `modify`.
        private static func slot(_ value: inout Int) -> Int { value }
    }

    /// Whether the record's current version was written after global sequence
    /// `sequence` (change tags are the base-36 sequence of the commit that wrote them).
    static func changedAfter(_ record: Record, _ sequence: UInt64) -> Bool {
        guard let tag = record.recordChangeTag, let written = UInt64(tag, radix: 36) else { return false }
        return written > sequence
    }

    /// ``changedAfter(_:_:)`` for a record as stored, read from its header.
    static func changedAfter(stored: UnsafeRawBufferPointer, _ sequence: UInt64) throws -> Bool {
        guard let tag = try RecordReader.changeTag(in: stored),
            let written = UInt64(String(decoding: tag, as: UTF8.self), radix: 36)
        else { return false }
        return written > sequence
    }

    private func changesLimit(_ requested: Int?) throws -> Int {
        let limit = requested ?? Self.defaultChangesLimit
        guard limit > 0, limit <= Self.maxChangesLimit else {
            throw CumulusError(.invalidArguments, "resultsLimit must be between 1 and \(Self.maxChangesLimit)")
        }
        return limit
    }

    /// Why a zone token of incarnation `token` no longer applies to `zone`, whose
    /// incarnation is `current` now, or `nil`.
    static func incarnationRefusal(_ zone: ZoneID, token: UInt64, current: UInt64) -> CumulusError? {
        guard token != current else { return nil }
        return CumulusError(
            .changeTokenExpired,
            "zone \(zone.zoneName) was deleted and created again since the change token was issued; fetch again without a token")
    }

    /// The zone feed position just before the zone's current incarnation began.
    private func creationPosition(
        _ zone: ZoneID, of database: DatabaseID, incarnation: UInt64, _ txn: LMDBReadTransaction
    ) throws -> UInt64 {
        guard incarnation > 0 else { return 0 }
        let store = container.store
        if incarnation < store.firstRetained {
            // Retention dropped the creating commit; the feed still knows its position.
            guard let position = try store.zonePosition(ofCommit: incarnation, database, zone, in: txn) else {
                throw CumulusError(.internalError, "the zone feed of \(zone.zoneName) has no entry for its creation")
            }
            return position - 1
        }
        guard let commit = try store.read(incarnation),
            let position = commit.zoneSequences.first(where: { $0.database == database && $0.zoneID == zone })
        else {
            throw CumulusError(.internalError, "the commit that created zone \(zone.zoneName) is missing from the log")
        }
        return position.sequence - 1
    }

    /// Waits (up to `timeout`) until a feed's head reaches `position`; a token ahead
    /// of this node's log after that is refused as retryable.
    func waitUntilFeed(
        reaches position: UInt64, timeout: Duration, head: @Sendable @escaping (LMDBReadTransaction) throws -> UInt64
    ) async throws {
        let store = container.store
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while try store.environment.read({ try head($0) }) < position {
            guard clock.now < deadline else {
                throw CumulusError(
                    .serverRejectedRequest,
                    "this server has not yet caught up with the change token's position; retry shortly")
            }
            // Re-read the feed head at least every 100 ms: a commit to another zone
            // wakes the wait without moving this feed.
            await store.waitForCommit(after: store.head.sequence, until: min(deadline, clock.now + .milliseconds(100)))
            try Task.checkCancellation()
        }
    }
}
