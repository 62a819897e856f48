import CumulusLog
import CumulusModel
import CumulusStorage

/// The projections of the log (``ViewProjection``, `Docs/ARCHITECTURE.md`): current
/// records and their indexes, the reference graph in both directions, assets, usage,
/// zones, subscriptions and notifications, schemas, shares.
///
/// ``apply(_:in:)`` is the one way state is derived from the log. The leader's
/// writer calls it for each commit inside the transaction that appends it, a
/// follower for each frame it receives, and ``ViewRebuilder`` for every commit of
/// the log — so the three can never disagree about what a commit means.
///
/// Readers take any transaction (read or write) of the same environment; what they
/// return is a copy, valid after the transaction ends.
///
/// This file is the dispatcher; each projection's writes and reads are in its folder
/// and touch only the tables it owns (``ViewTables/Name/projection``): `Records/`
/// (records, by type, field and token indexes), `References/` (the graph), `Assets/`
/// (asset reference counts), `Usage/` (bytes held), `Zones/` (zones, client change
/// tokens), `Subscriptions/` (matching and notifications), `Schema/` (schemas, roles,
/// index builds), `Shares/`; `Maintenance/` rebuilds, verifies and digests them all.
/// Every byte layout is in `ViewTables` and `ViewKeys`.
public final class Views: Sendable {
    /// The tables.
    public let tables: ViewTables
    /// Decoded subscription definitions, so matching does not decode per event.
    let subscriptionCache = SubscriptionCache()
    /// Parsed schemas, keyed by their stored bytes.
    let schemaCatalog = SchemaCatalog()
    /// Zone and database keys derived most recently: a record's view keys start with
    /// its zone's, derived by a SHA-256 per record otherwise. Public for the engine's
    /// planner and readers, which derive the same keys per operation.
    public let zoneKeys = FeedKeyCache()
    /// Pending token entries of recently searched zones, per snapshot.
    let pendingOverlays = PendingOverlayCache()

    /// Told of index builds a schema change causes (schema, record type, records
    /// done so far), every 10,000 records and at the end of each type; called on the
    /// thread applying the change, inside its transaction, so it must be quick.
    public let indexBuildObserver: (@Sendable (SchemaID, String, Int) -> Void)?

    /// Opens the views in `environment` (the log's own, so one transaction covers both).
    public init(environment: LMDBEnvironment, indexBuildObserver: (@Sendable (SchemaID, String, Int) -> Void)? = nil) throws {
        tables = try ViewTables(environment: environment)
        self.indexBuildObserver = indexBuildObserver
    }

    // MARK: - Applying commits

    /// Applies every event of `commit`, in order.
    public func apply(_ commit: Commit, in txn: LMDBWriteTransaction) throws {
        try apply(commit, derived: nil, in: txn)
    }

    /// Applies every event of `commit`, in order, using what ``derive(_:in:)`` made of
    /// it ahead where the schema it was made under is still in force: the views come
    /// out the same, byte for byte, with or without `derived`.
    public func apply(_ commit: Commit, derived: CommitDerivations?, in txn: LMDBWriteTransaction) throws {
        try registerZones(of: commit, txn)
        var firing = Firing(commit: commit)
        // Without any subscription (an O(1) count) matching costs nothing; the count
        // is taken again after a subscription is saved within the commit.
        var anySubscriptions: Bool?
        let tokens = try tokenWrites(for: commit, txn)
        var usage = RecordUsage()
        for (index, event) in commit.events.enumerated() {
            if anySubscriptions == nil { anySubscriptions = try txn.count(tables.subscriptionIndex) > 0 }
            // Match first: subscriptions compare the state before the event with after.
            if anySubscriptions == true { try notify(event, &firing, txn) }
            try apply(
                event, sequence: commit.sequence, tokens: tokens, derived: derived?.derivation(at: index), usage: &usage,
                in: txn)
            if case .subscriptionSaved = event { anySubscriptions = nil }
        }
        try write(usage, txn)
        try storeClientChangeToken(of: commit, txn)
        try mergePendingTokensIfFull(txn)
    }

    /// Applies one event: a dispatcher, each concern's writes live in its folder
    /// (Records, References, Assets, Usage, Zones, Subscriptions, Schema). What records
    /// come to hold or free is gathered in `usage`, written at the commit's end.
    func apply(
        _ event: Event, sequence: UInt64, tokens: TokenWrites, derived: CommitDerivations.Ahead?, usage: inout RecordUsage,
        in txn: LMDBWriteTransaction
    ) throws {
        switch event {
        case .recordSaved(let database, let record, _):
            let zoneKey = zoneKeys.zone(database, record.recordID.zoneID)
            let name = record.recordID.recordName
            let stamped = try schemaCatalog.stampedSchema(SchemaID(database), table: tables.schemas, in: txn)
            let derivation = try RecordDerivation.usable(derived, completing: record, zoneKey: zoneKey, schema: stamped)
            let stored = try saveRecord(
                record, zoneKey: zoneKey, schema: stamped.schema, tokens: tokens, derived: derivation, txn)
            // A record that was not stored (no bytes replaced) has no `refsOut` or
            // `assetsOut` entry to read: both are kept for current records only and go
            // with them. Most saves are of new records: two lookups fewer each.
            let existed = stored.old > 0
            try replaceReferences(
                of: name, zoneKey: zoneKey, with: derivation?.references ?? OutgoingReference.of(record), existed: existed,
                txn)
            let files = try updateAssets(zoneKey: zoneKey, name: name, to: record, existed: existed, sequence: sequence, txn)
            // A version keeps its creator, so the new one names who pays for the old.
            usage.charge(
                Int64(stored.new - stored.old) + files.new - files.old, in: database,
                creator: record.creatorUserRecordID?.recordName)
        case .recordDeleted(let database, let recordID, let recordType, _):
            let zoneKey = zoneKeys.zone(database, recordID.zoneID)
            let gone = try deleteRecord(
                recordID.recordName, zoneKey: zoneKey, recordType: recordType, in: database, tokens: tokens, txn)
            try replaceReferences(of: recordID.recordName, zoneKey: zoneKey, with: [], txn)
            let files = try updateAssets(zoneKey: zoneKey, name: recordID.recordName, to: nil, sequence: sequence, txn)
            usage.charge(-Int64(gone.size) - files.old, in: database, creator: gone.creator)
        case .changeTagBumped(let database, let recordID, let changeTag, _):
            try bumpChangeTag(recordID, to: changeTag, in: database, usage: &usage, txn)
        case .zoneSaved(let database, let zone):
            try saveZone(zone, in: database, sequence: sequence, txn)
        case .zoneDeleted(let database, let zoneID):
            let zoneKey = zoneKeys.zone(database, zoneID)
            try deleteShares(inZone: zoneID, of: database, sequence: sequence, txn)
            // What the zone's records held is freed before the rows that say so go.
            try chargeFreed(byZone: zoneKey, in: database, to: &usage, txn)
            try dropAssets(ofZone: zoneKey, txn)
            for projection in ViewProjection.allCases { try dropZoneEntries(of: projection, zoneKey: zoneKey, txn) }
            try deleteZone(zoneID, in: database, txn)
            try forgetZone(zoneKey, of: SchemaID(database), txn)
        case .subscriptionSaved(let database, let subscriptionID, let definition):
            try saveSubscription(database, subscriptionID, definition: definition, txn)
        case .subscriptionDeleted(let database, let subscriptionID):
            try removeSubscription(database, subscriptionID, txn)
        case .dictionaryInstalled, .epochBegan:
            break  // the log keeps dictionaries and epoch starts itself
        case .schemaChanged(let id, let text, _):
            try replaceSchema(id, withText: text, txn)
        case .schemaExtended(let id, let recordType, let fields):
            try replaceSchema(id, with: try schema(id, in: txn).extended(type: recordType, with: fields), txn)
        case .rolesAssigned(let id, let user, let roles):
            try assignRoles(roles, to: user, in: id, txn)
        case .shareSaved(let database, let share):
            try saveShare(share, in: database, sequence: sequence, txn)
        case .shareDeleted(let database, let zoneID, let recordName):
            try deleteShare(recordName, zoneID: zoneID, in: database, sequence: sequence, txn)
        }
    }

    /// Deletes every entry of the zone `zoneKey` from the zone-scoped tables of
    /// `projection` (``ViewTables/Name/isZoneScoped``): each projection's part of a
    /// zone's deletion, one prefix range per table.
    func dropZoneEntries(of projection: ViewProjection, zoneKey: [UInt8], _ txn: LMDBWriteTransaction) throws {
        for name in projection.tables where name.isZoneScoped {
            let table = tables.table(name)
            // Collect, then delete: a table must not change under its own scan.
            while true {
                var keys: [[UInt8]] = []
                try txn.scan(table, prefix: zoneKey) { key, _ in
                    if keys.last.map({ !$0.elementsEqual(key) }) ?? true { keys.append(Array(key)) }
                    return keys.count < 10_000
                }
                if keys.isEmpty { break }
                for key in keys { _ = try txn.delete(table, key: key) }
            }
        }
    }

    // MARK: - Deriving ahead

    /// What applying each of `commits` writes that follows from its saved records
    /// alone (``RecordDerivation``), made under the schemas `txn` sees: for a batch
    /// about to be applied, on a thread other than the writer's. A record whose
    /// schema cannot be read is left to be derived when applied, as is every event
    /// of a `nil` commit (a frame that could not be decoded ahead).
    public func derive(_ commits: [Commit?], in txn: LMDBReadTransaction) -> [CommitDerivations?] {
        // One lookup per container environment per batch; not remembered in the
        // catalog, which holds the writer's schema (see `stampedSchema`).
        var schemas: [SchemaID: StampedSchema?] = [:]
        return commits.map { commit in
            guard let commit else { return nil }
            return CommitDerivations(events: commit.events.map { event in
                guard case .recordSaved(let database, let record, _) = event else { return nil }
                let id = SchemaID(database)
                let schema: StampedSchema?
                if let known = schemas[id] {
                    schema = known
                } else {
                    schema = try? schemaCatalog.stampedSchema(id, table: tables.schemas, in: txn, remember: false)
                    schemas[id] = schema
                }
                guard let schema else { return nil }
                return try? RecordDerivation(
                    record, zoneKey: zoneKeys.zone(database, record.recordID.zoneID), schema: schema)
            })
        }
    }

    /// What saving `record` in `database` derives from its content under `schema`
    /// (``ContentDerivation``): made on a caller's task for the writer to complete,
    /// if `record`'s content is what it saves and `schema` is still in force.
    public func deriveContent(of record: Record, in database: DatabaseID, schema: StampedSchema) -> ContentDerivation {
        ContentDerivation(record, zoneKey: zoneKeys.zone(database, record.recordID.zoneID), schema: schema)
    }
}
