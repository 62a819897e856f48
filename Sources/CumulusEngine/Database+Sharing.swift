import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// The shared database (`Docs/DATA-MODEL.md`, "Sharing"): a user's view of other users' zones that shares
/// opened to them. Nothing is copied: every answer is read from the owner's private
/// database in one snapshot, through the shares as that snapshot has them, so a
/// participant never sees a record a share did not open to them at that commit.
///
/// A zone in the shared database keeps its owner's zone ID (`ownerName` is the
/// owner), which is how a request names whose zone it means.
extension Database {
    /// A shared zone, opened for reading: the owner's database and what the shares
    /// of the zone let the participant see.
    struct SharedZoneRead {
        let owner: DatabaseID
        let zoneID: ZoneID
        let scope: ShareScope
        let zoneKey: [UInt8]
    }

    /// The private database that holds `zone` of this shared database.
    func ownerDatabase(of zone: ZoneID) -> DatabaseID {
        ownerDatabase(named: zone.ownerName)
    }

    /// `owner`'s private database in this container environment.
    func ownerDatabase(named owner: String) -> DatabaseID {
        DatabaseID(container: id.container, environment: id.environment, scope: .private, owner: owner)
    }

    /// Opens `zone` of this shared database for `actor`: `zoneNotFound` unless a share
    /// of it was accepted, `permissionFailure` once their access ended.
    func openSharedZone(_ zone: ZoneID, actor: String, _ txn: LMDBReadTransaction) throws -> SharedZoneRead {
        let views = container.views
        guard !zone.isDefaultZone, zone.ownerName != actor, zone.ownerName != ZoneID.defaultOwnerName else {
            throw CumulusError(
                .zoneNotFound,
                "zone \(zone.zoneName) is not in your shared database (name a shared zone with its owner's user record name as ownerName)")
        }
        let owner = ownerDatabase(of: zone)
        guard let row = try views.sharedZone(of: actor, owner, zone, txn) else {
            throw CumulusError(.zoneNotFound, "zone \(zone.zoneName) of \(zone.ownerName) is not shared with you")
        }
        let scope = ShareScope(user: actor, shares: try views.shares(inZone: zone, of: owner, txn))
        guard row.status == .accepted, scope.isOpen, try views.zone(zone, in: owner, txn) != nil else {
            throw CumulusError(
                .permissionFailure,
                "your access to zone \(zone.zoneName) of \(zone.ownerName) has ended (you left, were removed, or the share was deleted)")
        }
        return SharedZoneRead(owner: owner, zoneID: zone, scope: scope, zoneKey: views.zoneKeys.zone(owner, zone))
    }

    /// Whether `record` of the opened zone is open to the participant.
    func isVisible(_ record: Record, in shared: SharedZoneRead, _ txn: LMDBReadTransaction) throws -> Bool {
        let views = container.views
        return try shared.scope.access(to: record) { name in
            try views.record(RecordID(recordName: name, zoneID: shared.zoneID), in: shared.owner, txn)?.parent
                .flatMap { $0.recordID.zoneID == shared.zoneID ? $0.recordID.recordName : nil }
        } != nil
    }

    /// Whether the participant could see record `recordID`, deleted in commit
    /// `deletedAt`, when it was last saved: its last version's parent chain (as the
    /// records stand now) reaches a shared root. Only hierarchy shares ask; a record
    /// whose history this node cannot read is not reported.
    func wasVisible(_ recordID: RecordID, deletedAt: UInt64, in shared: SharedZoneRead, _ txn: LMDBReadTransaction) throws -> Bool {
        let store = container.store
        guard deletedAt > 0,
            let entries = try? store.recordHistory(shared.owner, recordID, through: deletedAt - 1),
            let last = entries.last,
            let commit = try? store.commits(at: [last.sequence]).first
        else { return false }
        for case .recordSaved(let database, let record, _) in commit.events.reversed()
        where database == shared.owner && record.recordID == recordID {
            return try isVisible(record, in: shared, txn)
        }
        return false
    }

    /// The zones of this shared database the participant has now.
    func sharedZones(as actor: String) throws -> [Zone] {
        let views = container.views
        let database = id
        return try container.store.environment.read { txn in
            try views.sharedZones(of: database, txn).compactMap { row -> Zone? in
                guard row.status == .accepted else { return nil }
                return try views.zone(row.zoneID, in: row.ownerDatabase, txn)?.zone
            }
            .sorted { $0.zoneID < $1.zoneID }
        }
    }

    /// Records of the shared database by ID: each the record, or `unknownItem` when it
    /// does not exist or is not open to the participant (the two are not told apart).
    func fetchShared(_ ids: [RecordID], desiredKeys: [String]?, actor: String) throws
        -> [(recordID: RecordID, result: Result<Record, CumulusError>)]
    {
        let views = container.views
        let desired = DesiredKeys(desiredKeys)
        return try container.store.environment.read { txn in
            var opened: [ZoneID: Result<SharedZoneRead, CumulusError>] = [:]
            return try ids.map { recordID in
                let zone = recordID.zoneID
                if opened[zone] == nil {
                    do { opened[zone] = .success(try openSharedZone(zone, actor: actor, txn)) } catch let error as CumulusError {
                        opened[zone] = .failure(error)
                    }
                }
                guard let shared = opened[zone] else { throw CumulusError(.internalError, "shared zone not opened") }
                switch shared {
                case .failure(let error):
                    return (recordID, .failure(error.at(recordID)))
                case .success(let shared):
                    guard let record = try views.record(recordID, in: shared.owner, txn), try isVisible(record, in: shared, txn) else {
                        return (recordID, .failure(CumulusError(
                            .unknownItem, "record \(recordID.recordName) does not exist", recordID: recordID)))
                    }
                    return (recordID, .success(desired.applied(to: record)))
                }
            }
        }
    }

    /// Database changes of the shared database since `token`, whose position is a
    /// commit sequence (the shared database has no feed of its own: its changes are
    /// its zones' feeds and the participant's access, both ordered by commit).
    func sharedDatabaseChanges(since token: ChangeToken?, limit: Int, catchUpTimeout: Duration) async throws -> DatabaseChanges {
        var from: UInt64 = 0
        if let token {
            let store = container.store
            let contents = try openChangeToken(token, zone: nil)
            from = contents.position
            try container.checkFork(issuedIn: contents.epoch, "change token") { _ in from }
            try await waitUntilFeed(reaches: from, timeout: catchUpTimeout) { _ in store.head.sequence }
            try container.checkFork(issuedIn: contents.epoch, "change token") { _ in from }
        }
        return try sharedDatabaseChanges(from: from, limit: limit)
    }

    /// The zones of this shared database that changed, appeared or went away since
    /// `from` (a global commit sequence): the participant's access to each, and the
    /// owner's changes to its records, both ordered by the commit that made them.
    func sharedDatabaseChanges(from: UInt64, limit: Int) throws -> DatabaseChanges {
        let views = container.views
        let store = container.store
        let database = id
        return try store.environment.read { txn in
            var found: [(zone: ZoneID, sequence: UInt64, present: Bool)] = []
            for row in try views.sharedZones(of: database, txn) {
                var latest = row.changedAt
                var present = row.status == .accepted
                if present {
                    if try views.zone(row.zoneID, in: row.ownerDatabase, txn) == nil {
                        present = false
                    } else {
                        let head = try store.zoneHead(row.ownerDatabase, row.zoneID, in: txn)
                        if head > 0, let entry = try store.zoneFeed(row.ownerDatabase, row.zoneID, after: head - 1, limit: 1, in: txn).first {
                            latest = max(latest, entry.sequence)
                        }
                    }
                }
                if latest > from { found.append((row.zoneID, latest, present)) }
            }
            found.sort { ($0.sequence, $0.zone) < ($1.sequence, $1.zone) }
            // A page ends between commits, never inside one: zones changed by the same
            // commit come together, so the next token (that commit) skips none.
            var page = found
            var more = false
            if found.count > limit {
                let cut = found[limit - 1].sequence
                page = found.filter { $0.sequence <= cut }
                more = page.count < found.count
            }
            let position = page.map(\.sequence).max() ?? from
            let token = ChangeToken.make(
                ChangeToken.Contents(
                    kind: .database, logID: store.logID, epoch: store.epoch, database: database, zoneID: nil,
                    incarnation: 0, position: position, offset: 0),
                secret: container.secret)
            return DatabaseChanges(
                changedZones: page.filter(\.present).map(\.zone), deletedZones: page.filter { !$0.present }.map(\.zone),
                token: token, moreComing: more)
        }
    }
}

extension Database {
    /// The shares of `zone` in this private database (a zone-wide share, or one per
    /// shared hierarchy), with their participants: its owner's to read, as the records
    /// they share are.
    public func shares(inZone zone: ZoneID, as actor: String?) throws -> [Share] {
        try AccessPolicy.checkRead(id, actor: actor)
        guard id.scope == .private else {
            throw CumulusError(.invalidArguments, "shares are read in their owner's private database")
        }
        let zone = storedZoneID(zone)
        let views = container.views
        let database = id
        return try container.store.environment.read { txn in try views.shares(inZone: zone, of: database, txn) }
    }

    /// The share a `cloudkit.share` record of this database stands for (its
    /// participants and permissions, which the record's fields do not hold); `nil`
    /// for any other record.
    public func share(describing record: Record) throws -> Share? {
        guard Share.isShareType(record.recordType) else { return nil }
        let zone = record.recordID.zoneID
        let database = id.scope == .shared ? ownerDatabase(of: zone) : id
        let views = container.views
        return try container.store.environment.read { txn in
            try views.share(record.recordID.recordName, zoneID: zone, in: database, txn)
        }
    }
}
