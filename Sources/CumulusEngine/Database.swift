import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// One database of a container (`Docs/DATA-MODEL.md`, "Databases"): the Swift API a CloudKit developer
/// recognises. Every call names the acting user (`nil`: not signed in).
///
/// A lightweight value: make as many as you like. The request path is
/// validate (here, before anything touches storage) → plan (``ModifyPlanner``, on
/// the writer thread, against the views) → events → one write transaction that
/// appends the commit and updates the views.
public struct Database: Sendable {
    /// Which database.
    public let id: DatabaseID
    let container: Container

    init(id: DatabaseID, container: Container) {
        self.id = id
        self.container = container
    }

    private var normalizer: Normalizer { Normalizer(database: id) }

    /// `zoneID` as this database stores and answers it: in a private or shared
    /// database the `__defaultOwner__` placeholder becomes the database's owner, so a
    /// client that named the zone either way is told its real owner
    /// (`Docs/HTTP-API.md`, "What clients send").
    public func storedZoneID(_ zoneID: ZoneID) -> ZoneID {
        normalizer.zone(zoneID)
    }

    // MARK: - Records

    /// Saves and deletes records as one operation with a native save policy.
    public func modify(
        saving: [Record] = [], deleting: [RecordID] = [], savePolicy: SavePolicy = .ifServerRecordUnchanged,
        atomic: Bool = true, clientChangeTokenData: [UInt8]? = nil, as actor: String?
    ) async throws -> ModifyResult {
        try await modify(
            ModifyOperation(
                saves: saving.map { RecordSave($0, mode: savePolicy.mode) },
                deletes: deleting.map { RecordDelete($0) },
                atomic: atomic, clientChangeTokenData: clientChangeTokenData),
            as: actor)
    }

    /// Runs a modify operation. Throws for the operation as a whole (too many
    /// items, a record named twice, not allowed); item failures are in the result.
    public func modify(_ operation: ModifyOperation, as actor: String?) async throws -> ModifyResult {
        let plan = try await planner(for: operation, as: actor)
        let (_, result) = try await container.writer.submit { context in try plan.plan(context) }
        return result
    }

    /// The planner of `operation`: validated, normalized and prepared on the caller's
    /// task, to be run on the writer (``modify(_:as:)``) or against a read transaction
    /// (``DeletionPreview``).
    func planner(for operation: ModifyOperation, as actor: String?) async throws -> ModifyPlanner {
        let actor = try AccessPolicy.checkWrite(id, actor: actor)
        let count = operation.saves.count + operation.deletes.count
        guard count <= operation.itemLimit else {
            throw CumulusError(
                .limitExceeded,
                "\(count) items in one operation; the limit is \(operation.itemLimit). Split it in half and retry")
        }
        let normalizer = self.normalizer
        var saves = operation.saves
        var saveErrors: [Int: CumulusError] = [:]
        // Files this operation's receipts proved (``proveAssets(in:as:)``).
        var provenAssets = Set<AssetChecksum>()
        var seen = Set<RecordID>()
        for index in saves.indices {
            saves[index].record = normalizer.record(saves[index].record)
            let record = saves[index].record
            guard seen.insert(record.recordID).inserted else {
                throw CumulusError(
                    .invalidArguments, "record \(record.recordID.recordName) appears twice; one operation per record",
                    recordID: record.recordID)
            }
            do {
                // The size is measured once, by the planner, on the record as stored.
                try RecordValidator.checkRules(record, in: id.scope)
                provenAssets.formUnion(try proveAssets(in: &saves[index].record, as: actor))
            } catch let error as CumulusError {
                saveErrors[index] = error
            }
        }
        var deletes = operation.deletes
        var deleteErrors: [Int: CumulusError] = [:]
        for index in deletes.indices {
            deletes[index].recordID = normalizer.recordID(deletes[index].recordID)
            let recordID = deletes[index].recordID
            guard seen.insert(recordID).inserted else {
                throw CumulusError(
                    .invalidArguments, "record \(recordID.recordName) appears twice; one operation per record",
                    recordID: recordID)
            }
            do {
                try NameRules.checkRecordID(recordID, allowSystem: true)
            } catch let error as CumulusError {
                deleteErrors[index] = error
            }
        }
        // Through the shared database the records are written where they live, in
        // their owner's private database, as the participant.
        var target = id
        if id.scope == .shared {
            let owners = Set(saves.map(\.record.recordID.zoneID.ownerName) + deletes.map(\.recordID.zoneID.ownerName))
            guard owners.count <= 1 else {
                throw CumulusError(
                    .invalidArguments,
                    "one modify in the shared database writes to one owner's zones; split it by owner (\(owners.sorted().joined(separator: ", ")))")
            }
            if let owner = owners.first {
                guard owner != actor else {
                    throw CumulusError(
                        .zoneNotFound, "your own zones are in your private database, not your shared one")
                }
                target = ownerDatabase(named: owner)
            }
        }
        var planner = ModifyPlanner(
            views: container.views, database: target, actor: actor, saves: saves, deletes: deletes,
            atomic: operation.atomic, saveErrors: saveErrors, deleteErrors: deleteErrors,
            clientChangeTokenData: operation.clientChangeTokenData,
            requestID: operation.requestID ?? UUID.random().uuidString, provenAssets: provenAssets)
        planner.viaSharedDatabase = id.scope == .shared
        planner.cpuLimit = operation.cpuLimit
        planner.recordQuota = operation.recordQuota
        planner.prepared = await PreparedSave.prepare(
            saves, skipping: saveErrors, in: target, views: container.views, environment: container.store.environment)
        return planner
    }

    /// Fetches records by ID: per ID, the record or `unknownItem`, in the order
    /// given. `desiredKeys` limits the user fields returned (`nil`: all, `[]`: none);
    /// system fields always come back.
    public func fetch(_ ids: [RecordID], desiredKeys: [String]? = nil, as actor: String?) throws
        -> [(recordID: RecordID, result: Result<Record, CumulusError>)]
    {
        if id.scope == .shared, let actor {
            try AccessPolicy.checkRead(id, actor: actor)
            return try fetchShared(ids, desiredKeys: desiredKeys, actor: actor)
        }
        let desired = DesiredKeys(desiredKeys)
        var results: [(recordID: RecordID, result: Result<Record, CumulusError>)] = []
        results.reserveCapacity(ids.count)
        var hints = RecordDecodeHints()
        try fetch(ids, as: actor) { index, stored in
            switch stored {
            case .success(let buffer):
                let record = try RecordCodec.decodeForReading(buffer, hints: &hints)
                results.append((ids[index], .success(desired.applied(to: record))))
            case .failure(let error):
                results.append((ids[index], .failure(error)))
            }
        }
        return results
    }

    /// Fetches records by ID, handing `body` each one's index in `ids` and its stored
    /// bytes (or `unknownItem`, `permissionFailure`), in the order given, from inside
    /// one read transaction: each buffer is valid only during that call of `body`
    /// (``StoredRecordPage``'s rule). What the server writes a lookup's answer from.
    /// In the shared database the records a share shows are encoded for the call.
    public func fetch(
        _ ids: [RecordID], as actor: String?, _ body: (Int, Result<UnsafeRawBufferPointer, CumulusError>) throws -> Void
    ) throws {
        _ = try fetchStored(ids, as: actor, while: { index, item in
            try body(index, item)
            return true
        })
    }

    /// ``fetch(_:as:_:)`` until `body` returns `false`: the IDs after that one are not
    /// read. Returns how many IDs `body` was handed. A lookup stops this way once its
    /// answer holds as many bytes as a response may, in the one read transaction.
    public func fetchStored(
        _ ids: [RecordID], as actor: String?, while body: (Int, Result<UnsafeRawBufferPointer, CumulusError>) throws -> Bool
    ) throws -> Int {
        try AccessPolicy.checkRead(id, actor: actor)
        if id.scope == .shared, let actor {
            // Share visibility is decided on records; what it lets through is handed
            // on as bytes like any other read's.
            for (index, item) in try fetchShared(ids, desiredKeys: nil, actor: actor).enumerated() {
                let goOn: Bool
                switch item.result {
                case .success(let record):
                    let bytes = try RecordCodec.encode(record)
                    goOn = try bytes.withUnsafeBytes { try body(index, .success($0)) }
                case .failure(let error):
                    goOn = try body(index, .failure(error))
                }
                if !goOn { return index + 1 }
            }
            return ids.count
        }
        let normalizer = self.normalizer
        let views = container.views
        let database = id
        let store = container.store
        return try store.environment.read { txn in
            let access = try ReadAccess(
                views: views, database: database, schema: views.schema(SchemaID(database), in: txn), actor: actor, txn: txn)
            // One cursor for every lookup: IDs that sit near each other in key order are
            // found on the cursor's leaf page without a descent from the root.
            return try views.withRecordsCursor(txn) { cursor in
                // A fetch's IDs are nearly always in one zone: its key is looked up once,
                // not once per ID (the shared cache's lookup was 8 % of a fetch's profile).
                var lastZone: (id: ZoneID, key: [UInt8])?
                for (index, requested) in ids.enumerated() {
                    let recordID = normalizer.recordID(requested)
                    let zoneKey: [UInt8]
                    if let lastZone, lastZone.id.hasSameBytes(as: recordID.zoneID) {
                        zoneKey = lastZone.key
                    } else {
                        zoneKey = store.zoneKey(database, recordID.zoneID)
                        lastZone = (recordID.zoneID, zoneKey)
                    }
                    let goOn: Bool
                    if let stored = try views.storedRecord(zoneKey: zoneKey, name: recordID.recordName, cursor: cursor) {
                        if let denied = try access.denial(stored) {
                            goOn = try body(index, .failure(CumulusError(
                                .permissionFailure, "you may not read records of type \(denied) (no READ grant)",
                                recordID: recordID)))
                        } else {
                            goOn = try body(index, .success(stored))
                        }
                    } else {
                        goOn = try body(index, .failure(CumulusError(
                            .unknownItem, "record \(recordID.recordName) does not exist", recordID: recordID)))
                    }
                    if !goOn { return index + 1 }
                }
                return ids.count
            }
        }
    }

    /// Fetches one record; throws `unknownItem` if it does not exist.
    public func fetch(_ recordID: RecordID, desiredKeys: [String]? = nil, as actor: String?) throws -> Record {
        guard let first = try fetch([recordID], desiredKeys: desiredKeys, as: actor).first else {
            throw CumulusError(.internalError, "fetch returned nothing")
        }
        return try first.result.get()
    }

    // MARK: - Zones

    /// Creates and deletes zones as one operation, in order, in one commit
    /// (``ZonePlanner``): per operation, the zone as saved (a zone that exists is
    /// returned unchanged; custom zones exist only in private databases), `nil` for a
    /// deletion, which takes every record of the zone with it (one event per zone,
    /// not one per record), or why it was refused.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    public func modifyZones(_ operations: [ZoneOperation], as actor: String?, requestID: String = UUID.random().uuidString)
        async throws -> [(operation: ZoneOperation, result: Result<Zone?, CumulusError>)]
    {
        let actor = try AccessPolicy.checkWrite(id, actor: actor)
        let normalized = operations.map { operation -> ZoneOperation in
            switch operation {
            case .save(let zoneID): .save(normalizer.zone(zoneID))
            case .delete(let zoneID): .delete(normalizer.zone(zoneID))
            }
        }
        var errors: [Int: CumulusError] = [:]
        for (index, operation) in normalized.enumerated() {
            do {
                try ZonePlanner.validate(operation, in: id)
            } catch let error as CumulusError {
                errors[index] = error
            }
        }
        let planner = ZonePlanner(
            views: container.views, database: id, actor: actor, operations: normalized, errors: errors, requestID: requestID)
        let (_, outcomes) = try await container.writer.submit { context in try planner.plan(context) }
        return zip(normalized, outcomes).map { ($0, $1) }
    }

    /// Creates zones: ``modifyZones(_:as:requestID:)`` with saves only.
    public func saveZones(_ zoneIDs: [ZoneID], as actor: String?, requestID: String = UUID.random().uuidString) async throws
        -> [(zoneID: ZoneID, result: Result<Zone, CumulusError>)]
    {
        try await modifyZones(zoneIDs.map(ZoneOperation.save), as: actor, requestID: requestID).map { item in
            (item.operation.zoneID, item.result.flatMap { zone in
                zone.map { .success($0) } ?? .failure(CumulusError(.internalError, "a saved zone came back deleted"))
            })
        }
    }

    /// Deletes zones and every record in them: ``modifyZones(_:as:requestID:)`` with
    /// deletions only.
    public func deleteZones(_ zoneIDs: [ZoneID], as actor: String?, requestID: String = UUID.random().uuidString) async throws
        -> [(zoneID: ZoneID, result: Result<Void, CumulusError>)]
    {
        try await modifyZones(zoneIDs.map(ZoneOperation.delete), as: actor, requestID: requestID).map { item in
            (item.operation.zoneID, item.result.map { _ in () })
        }
    }

    /// Fetches zones by ID: per ID the zone or `zoneNotFound`.
    public func fetchZones(_ zoneIDs: [ZoneID], as actor: String?) throws
        -> [(zoneID: ZoneID, result: Result<Zone, CumulusError>)]
    {
        try AccessPolicy.checkRead(id, actor: actor)
        let all = try allZones(as: actor)
        return zoneIDs.map(normalizer.zone).map { zoneID in
            if let zone = all.first(where: { $0.zoneID == zoneID }) { return (zoneID, .success(zone)) }
            return (zoneID, .failure(CumulusError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")))
        }
    }

    /// Every zone of the database, the default zone first (none in a shared database).
    public func allZones(as actor: String?) throws -> [Zone] {
        try AccessPolicy.checkRead(id, actor: actor)
        if id.scope == .shared, let actor { return try sharedZones(as: actor) }
        let database = id
        let views = container.views
        let stored = try container.store.environment.read { try views.zones(in: database, $0) }
        let custom = stored.map(\.zone).sorted { $0.zoneID < $1.zoneID }
        guard database.scope != .shared else { return custom }
        return [Zone(zoneID: normalizer.zone(.default))] + custom
    }
}
