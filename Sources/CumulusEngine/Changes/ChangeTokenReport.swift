import CumulusLog
import CumulusModel
import CumulusStorage

/// What a client's change token names, read by an operator (the console's change-token
/// page): its zone or database, where in that feed it stands and how far behind the feed's
/// head, the commit it covers last and when that was, the epoch it was issued in beside
/// this node's history, and whether this node would refuse it, with the reason the client
/// would be given. The checks are the ones a `changes/zone` or `changes/database` request
/// makes; reading a report changes nothing (a token of a newer epoch does not make this
/// node learn of it, as a client's would).
public struct ChangeTokenReport: Sendable {
    /// A zone's token, or a database's.
    public var isZoneToken: Bool
    /// The database it was issued for.
    public var database: DatabaseID
    /// Its zone (zone tokens).
    public var zoneID: ZoneID?
    /// The epoch it was issued in.
    public var epoch: UInt64
    /// This node's epoch.
    public var nodeEpoch: UInt64
    /// The last commit of the token's epoch in this node's log, when a later epoch began
    /// here (`nil`: the epoch did not end here).
    public var epochEnd: UInt64?
    /// Whether it comes from this node's log.
    public var sameLog: Bool
    /// The zone incarnation it was issued in (the commit that created the zone; 0 for
    /// the default zone and for database tokens).
    public var incarnation: UInt64
    /// The zone's incarnation now, `nil` when the zone does not exist.
    public var currentIncarnation: UInt64?
    /// The last feed entry consumed.
    public var position: UInt64
    /// Changes already consumed of the entry after ``position``.
    public var offset: UInt32
    /// The feed's last entry now.
    public var feedHead: UInt64
    /// The commit behind the last entry the token covers (0: none; `nil`: this node's
    /// feed does not hold that entry).
    public var lastCovered: UInt64?
    /// When ``lastCovered`` was made, if the log still holds it.
    public var lastCoveredTime: Timestamp?
    /// Why this node would refuse the token, as the client would be told; `nil` if it
    /// would serve it.
    public var refusal: CumulusError?
}

extension Container {
    /// What `token` names and whether this node would take it (``ChangeTokenReport``).
    /// Throws `changeTokenExpired` only for a token that does not open at all: damaged,
    /// forged, or sealed by a server with another secret; then nothing can be said of it.
    public func inspect(_ token: ChangeToken) throws -> ChangeTokenReport {
        let contents = try token.open(secret: secret, expecting: nil)
        let database = self.database(contents.database)
        let zone = contents.zoneID
        // A shared zone's feed is its owner's.
        let feedDatabase = contents.database.scope == .shared && zone != nil
            ? database.ownerDatabase(of: zone ?? .default) : contents.database
        let store = self.store
        let views = self.views
        var report = ChangeTokenReport(
            isZoneToken: zone != nil, database: contents.database, zoneID: zone, epoch: contents.epoch,
            nodeEpoch: store.epoch,
            epochEnd: contents.epoch < store.epoch
                ? try store.logEnvironment.read { try store.lastSequence(ofEpoch: contents.epoch, in: $0) } : nil,
            sameLog: contents.logID == store.logID, incarnation: contents.incarnation, currentIncarnation: nil,
            position: contents.position, offset: contents.offset, feedHead: 0)
        try store.environment.read { txn in
            if let zone {
                report.feedHead = try store.zoneHead(feedDatabase, zone, in: txn)
                report.currentIncarnation =
                    zone.isDefaultZone ? 0 : try views.zone(zone, in: feedDatabase, txn)?.incarnation
            } else {
                report.feedHead = try store.databaseHead(feedDatabase, in: txn)
            }
            report.lastCovered = try Container.lastCovered(position: contents.position, offset: contents.offset) { covered in
                if let zone {
                    return try store.zoneFeed(feedDatabase, zone, after: covered - 1, limit: 1, in: txn).first
                        .map { ($0.zoneSequence, $0.sequence) }
                }
                return try store.databaseFeed(feedDatabase, after: covered - 1, limit: 1, in: txn).first
                    .map { ($0.databaseSequence, $0.sequence) }
            }
        }
        if let covered = report.lastCovered, covered > 0, covered >= store.firstRetained {
            report.lastCoveredTime = try store.read(covered)?.timestamp
        }
        report.refusal = refusal(of: contents, report, in: database, feedDatabase: feedDatabase)
        return report
    }

    /// The first check a changes request would fail, in the order it makes them.
    private func refusal(
        of contents: ChangeToken.Contents, _ report: ChangeTokenReport, in database: Database, feedDatabase: DatabaseID
    ) -> CumulusError? {
        if let refusal = epochRefusal(ofToken: contents.epoch) { return refusal }
        do {
            try database.checkOrigin(contents, zone: contents.zoneID)
            try database.checkFork(contents, feedDatabase: feedDatabase)
        } catch let error as CumulusError {
            return error
        } catch {
            return CumulusError(.internalError, "\(error)")
        }
        if let zone = contents.zoneID {
            guard let current = report.currentIncarnation else {
                return CumulusError(.zoneNotFound, "zone \(zone.zoneName) does not exist")
            }
            return Database.incarnationRefusal(zone, token: contents.incarnation, current: current)
        }
        return nil
    }
}
