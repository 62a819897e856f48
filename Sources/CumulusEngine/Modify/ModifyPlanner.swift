import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Turns a validated modify operation into events (`Docs/DATA-MODEL.md`, "References",
/// "Modify operations"): runs on the
/// writer thread inside the group's transaction, reading the views as they stand
/// after every earlier commit, and writes nothing itself — the events it returns are
/// appended and applied by the writer.
///
/// Items are grouped by zone (references never cross zones, so zones are
/// independent). In a zone with the `atomic` capability an atomic operation is
/// all-or-nothing: the failing item keeps its error and every other item of that
/// zone gets `batchRequestFailed`. Elsewhere each item stands alone.
///
/// The schema of the database's container environment (``EffectiveSchema``) decides
/// what a save may hold and, in the public database, who may create, change or
/// delete records of each type. In development, types and fields it does not declare
/// are added just in time: one `schemaExtended` event per new type and per new field,
/// placed before the saves in the same commit, so the log says when each appeared.
struct ModifyPlanner {
    let views: Views
    let database: DatabaseID
    let actor: String
    let saves: [RecordSave]
    let deletes: [RecordDelete]
    let atomic: Bool
    /// Errors found before planning (validation), by item.
    let saveErrors: [Int: CumulusError]
    let deleteErrors: [Int: CumulusError]
    let clientChangeTokenData: [UInt8]?
    let requestID: String
    /// Asset files the operation's receipts proved (``checkAssets(_:existing:proven:)``).
    var provenAssets: Set<AssetChecksum> = []
    /// The actor writes through their shared database into `database` (the zone
    /// owner's private one): every item must be in a share open to them for writing.
    var viaSharedDatabase = false
    /// The CPU time planning may spend (``WorkBudget``), counted per item and per
    /// record a cascade takes: the writer is everyone's, so no operation may hold it
    /// for long.
    var cpuLimit = Database.defaultRequestCPULimit
    /// The bytes records may hold (``RecordQuota``); `nil`: unbounded.
    var recordQuota: RecordQuota?
    /// The saves made ready on the caller's task (``PreparedSave``), by index in
    /// `saves`; empty: none was.
    var prepared: [PreparedSave?] = []

    private enum Item: Hashable {
        case save(Int)
        case delete(Int)
    }

    /// What the schema says for this operation: its rules (grown by the saves planned
    /// so far) and the acting user's roles.
    private struct SchemaContext {
        var schema: EffectiveSchema
        let roles: Set<String>
        /// The stamp of `schema` as stored (``StampedSchema``); `nil` once the
        /// operation's saves have grown it.
        var stamp: UInt64?
    }

    /// Plans the operation: the commit to append (if anything changes) and the result.
    func plan(_ context: LogWriter.PlanContext) throws -> (CommitRequest?, ModifyResult) {
        let tag = String(context.sequence, radix: 36)
        let budget = WorkBudget(cpuLimit, for: "this operation")
        var overlay = PlanOverlay(views: views, database: database, transaction: context.transaction)
        let schemaID = SchemaID(database)
        let stamped = try views.stampedSchema(schemaID, in: context.transaction)
        let original = stamped.schema
        var rules = SchemaContext(
            schema: original,
            roles: EffectiveSchema.roles(of: actor, assigned: try views.roles(of: actor, in: schemaID, context.transaction)),
            stamp: stamped.stamp)
        // Content derived ahead, by record, for the saves whose planned record holds it.
        var derived: [RecordID: ContentDerivation] = [:]
        var saveResults = [Result<Record, CumulusError>?](repeating: nil, count: saves.count)
        var deleteResults = [Result<Void, CumulusError>?](repeating: nil, count: deletes.count)

        var byZone: [ZoneID: [Item]] = [:]
        for index in saves.indices { byZone[saves[index].record.recordID.zoneID, default: []].append(.save(index)) }
        for index in deletes.indices { byZone[deletes[index].recordID.zoneID, default: []].append(.delete(index)) }

        for zone in byZone.keys.sorted() {
            let items = byZone[zone] ?? []
            // Through the shared database a zone no share opens to the actor does not
            // exist for them, whether or not its owner has it.
            if viaSharedDatabase, try !ShareScope(user: actor, shares: overlay.shares(inZone: zone)).isOpen {
                let error = CumulusError(.zoneNotFound, "zone \(zone.zoneName) of \(zone.ownerName) is not shared with you")
                for item in items { record(item, .failure(error), &saveResults, &deleteResults) }
                continue
            }
            guard let capabilities = try zoneCapabilities(zone, context.transaction) else {
                let error = CumulusError(
                    .zoneNotFound, "zone \(zone.zoneName) does not exist in the \(database.scope) database; create it first")
                for item in items { record(item, .failure(error), &saveResults, &deleteResults) }
                continue
            }
            let atomicZone = atomic && capabilities.contains(.atomic)
            let checkpoint = overlay
            var failed: [Item: CumulusError] = [:]
            // Share records last: a share's root may be saved in the same operation.
            var orderedSaves = saveOrder(items.compactMap { if case .save(let i) = $0 { i } else { nil } })
            if orderedSaves.contains(where: { Share.isShareType(saves[$0].record.recordType) }) {
                orderedSaves = orderedSaves.filter { !Share.isShareType(saves[$0].record.recordType) }
                    + orderedSaves.filter { Share.isShareType(saves[$0].record.recordType) }
            }
            if orderedSaves.count > 1 { overlay.reserveSaves(orderedSaves.count) }
            var pending = Set(orderedSaves.filter { saveErrors[$0] == nil }.map { saves[$0].record.recordID })
            let ordered = orderedSaves.map(Item.save) + items.filter { if case .delete = $0 { true } else { false } }

            // Every item is planned, even in an atomic zone after a failure, so each
            // item that fails on its own reports its own error.
            for item in ordered {
                // Outside the item's own errors: a spent budget ends the operation.
                try budget.spend()
                if let error = preError(item) {
                    failed[item] = error
                    if case .save(let i) = item { pending.remove(saves[i].record.recordID) }
                    continue
                }
                // Items check everything before they change the overlay, so a failing
                // item leaves nothing to undo (no per-item copy of the overlay).
                do {
                    switch item {
                    case .save(let index):
                        pending.remove(saves[index].record.recordID)
                        saveResults[index] = .success(
                            try planSave(
                                saves[index], prepared: index < prepared.count ? prepared[index] : nil, pending: pending,
                                now: context.now, tag: tag, &rules, &overlay, &derived))
                    case .delete(let index):
                        try planDelete(deletes[index], tag: tag, rules, budget, &overlay)
                        deleteResults[index] = .success(())
                    }
                } catch let error as CumulusError {
                    failed[item] = error
                }
            }
            for (item, error) in failed { record(item, .failure(error), &saveResults, &deleteResults) }
            // A cascade that spent the budget failed its own item: end the operation.
            try budget.check()
            if atomicZone && !failed.isEmpty {
                overlay = checkpoint
                let error = CumulusError(
                    .batchRequestFailed,
                    "not applied: another item of this atomic operation in zone \(zone.zoneName) failed")
                for item in items where failed[item] == nil { record(item, .failure(error), &saveResults, &deleteResults) }
            }
        }
        // In the public database a reference changes nothing the target's writers did
        // not allow: a target the actor may not write keeps its change tag.
        try overlay.emitTagBumps(tag: tag, allowing: database.scope == .public ? { mayWrite($0, rules) } : nil)
        let events = justInTimeEvents(original, overlay.events) + overlay.events

        let result = ModifyResult(
            saveResults: saves.indices.map { index in
                (saves[index].record.recordID,
                 saveResults[index] ?? .failure(CumulusError(.internalError, "item was not planned")))
            },
            deleteResults: deletes.indices.map { index in
                (deletes[index].recordID,
                 deleteResults[index] ?? .failure(CumulusError(.internalError, "item was not planned")))
            },
            sequence: events.isEmpty ? nil : context.sequence)
        guard !events.isEmpty else { return (nil, result) }
        var request = CommitRequest(
            actor: actor, requestID: requestID, clientChangeTokenData: clientChangeTokenData, events: events)
        if !derived.isEmpty {
            // Saved IDs are unique within an operation, so each derivation finds its event.
            request.workAhead = CommitDerivations(contents: events.map { event in
                guard case .recordSaved(_, let record, _) = event else { return nil }
                return derived[record.recordID]
            })
        }
        return (request, result)
    }

    /// The schema events development growth needs for the saves that survived
    /// planning: the new type (with its system fields), then each new field.
    private func justInTimeEvents(_ schema: EffectiveSchema, _ events: [Event]) -> [Event] {
        guard schema.growsJustInTime else { return [] }
        let id = SchemaID(database)
        var current = schema
        var added: [Event] = []
        // Share records are the system's type, outside every schema.
        for case .recordSaved(_, let record, _) in events where !Share.isShareType(record.recordType) {
            let (newType, fields) = current.additions(for: record)
            guard newType != nil || !fields.isEmpty else { continue }
            if let newType {
                added.append(.schemaExtended(schema: id, recordType: newType.name, fields: newType.fields))
            }
            for field in fields { added.append(.schemaExtended(schema: id, recordType: record.recordType, fields: [field])) }
            let grown = current.extended(type: record.recordType, with: (newType?.fields ?? []) + fields)
            current = EffectiveSchema(grown, environment: schema.environment)
        }
        return added
    }

    private func preError(_ item: Item) -> CumulusError? {
        switch item {
        case .save(let index): saveErrors[index]
        case .delete(let index): deleteErrors[index]
        }
    }

    private func record(
        _ item: Item, _ outcome: Result<Void, CumulusError>,
        _ saveResults: inout [Result<Record, CumulusError>?], _ deleteResults: inout [Result<Void, CumulusError>?]
    ) {
        switch (item, outcome) {
        case (.save(let index), .failure(let error)): saveResults[index] = .failure(error.at(saves[index].record.recordID))
        case (.delete(let index), .failure(let error)): deleteResults[index] = .failure(error.at(deletes[index].recordID))
        case (.delete(let index), .success): deleteResults[index] = .success(())
        case (.save, .success): break
        }
    }

    /// The zone's capabilities, or `nil` if it does not exist. The default zone
    /// exists in the public and private databases; the shared database has none.
    private func zoneCapabilities(_ zone: ZoneID, _ txn: LMDBReadTransaction) throws -> ZoneCapabilities? {
        if zone.isDefaultZone { return database.scope == .shared ? nil : .defaultZone }
        return try views.zone(zone, in: database, txn)?.zone.capabilities
    }

    /// Saves ordered so that targets come before the records referring to them
    /// (`Docs/DATA-MODEL.md`, "References"), whatever order the caller gave; cycles
    /// keep the caller's order.
    private func saveOrder(_ indices: [Int]) -> [Int] {
        // One save has no order to find (most operations are one record); reading
        // its references here was an eighth of planning a single save.
        guard indices.count > 1 else { return indices }
        var indexByID: [RecordID: Int] = [:]
        indexByID.reserveCapacity(indices.count)
        for index in indices { indexByID[saves[index].record.recordID] = index }
        var visited = [Bool](repeating: false, count: saves.count)
        var order: [Int] = []
        order.reserveCapacity(indices.count)
        func visit(_ index: Int) {
            guard !visited[index] else { return }
            visited[index] = true
            let record = saves[index].record
            for edge in OutgoingReference.of(record) {
                let target = RecordID(recordName: edge.targetName, zoneID: record.recordID.zoneID)
                if let targetIndex = indexByID[target] { visit(targetIndex) }
            }
            order.append(index)
        }
        for index in indices { visit(index) }
        return order
    }

    private func planSave(
        _ save: RecordSave, prepared: PreparedSave?, pending: Set<RecordID>, now: Timestamp, tag: String,
        _ rules: inout SchemaContext, _ overlay: inout PlanOverlay, _ derived: inout [RecordID: ContentDerivation]
    ) throws -> Record {
        let id = save.record.recordID
        let existing = try overlay.record(id)
        let isShare = Share.isShareType(save.record.recordType)
        if viaSharedDatabase { try checkParticipantSave(save.record, existing: existing, &overlay) }
        if isShare != (existing.map { Share.isShareType($0.recordType) } ?? isShare) {
            throw CumulusError(.invalidArguments, "a record cannot become a share or stop being one; save a new record", recordID: id)
        }
        if database.scope == .public {
            if let existing {
                try checkGrant(.write, existing, rules)
            } else if !rules.schema.allows(
                .create, on: save.record.recordType, roles: rules.roles, actor: actor, creator: nil)
            {
                throw CumulusError(
                    .permissionFailure,
                    "you may not create records of type \(save.record.recordType) in the public database (no CREATE grant)",
                    recordID: id)
            }
        }
        // Prepared under the schema in force: coerced already (shares never are).
        let prepared = prepared.flatMap { $0.schemaStamp == rules.stamp ? $0 : nil }
        var record: Record
        do {
            record = try RecordMerger.merge(
                isShare ? save.record : prepared?.record ?? rules.schema.coerced(save.record), onto: existing,
                mode: save.mode)
        } catch let error as CumulusError {
            throw conflict(error, readable: existing, rules)
        }
        if isShare { record.recordType = Share.recordType }
        record.creationDate = existing?.creationDate ?? now
        record.creatorUserRecordID = existing?.creatorUserRecordID ?? RecordID(recordName: actor)
        record.modificationDate = now
        record.lastModifiedUserRecordID = RecordID(recordName: actor)
        record.recordChangeTag = tag
        record.share = existing?.share
        record.clearChangedKeys()
        // Prepared content passed the content's rules on the caller's task.
        let preparedContent = prepared?.hasContent(of: record) ?? false
        try RecordValidator.validateForStorage(&record, in: database.scope, rulesHeld: preparedContent)
        if !isShare && !preparedContent { try rules.schema.check(record) }
        try Self.checkAssets(record, existing: existing, proven: provenAssets)
        try checkQuota(record, overlay.transaction)

        // A participant sees only what their shares open: a target outside them is
        // answered exactly as a missing one, so a reference cannot probe the owner's
        // zone, nor a VALIDATE one pin the owner's record (issue 40).
        func exists(_ target: RecordID) throws -> Bool {
            if pending.contains(target) { return true }
            guard let found = try overlay.record(target) else { return false }
            return try !viaSharedDatabase || participantSees(found, &overlay)
        }
        if let parent = record.parent, parent != existing?.parent, try !exists(parent.recordID) {
            throw CumulusError(
                .invalidArguments,
                "parent \(parent.recordID.recordName) does not exist; save it first or in the same operation",
                recordID: id, field: "parent")
        }
        let oldEdges = Set(existing.map(OutgoingReference.of) ?? [])
        for (field, reference) in record.fieldReferences {
            let edge = OutgoingReference(targetName: reference.recordID.recordName, action: reference.action)
            if database.scope == .public, reference.action != .none, !oldEdges.contains(edge) {
                try checkReferenceGrant(reference, field: field, from: id, rules, &overlay)
            }
            switch reference.action {
            case .validate:
                if try !exists(reference.recordID) {
                    throw CumulusError(
                        .referenceViolation,
                        "validating reference to \(reference.recordID.recordName), which does not exist",
                        recordID: id, field: field)
                }
            case .deleteSelf where try !oldEdges.contains(edge) && exists(reference.recordID):
                let owners = try overlay.deleteSelfOwnerCount(reference.recordID)
                if owners >= Limits.maxDeleteSelfReferencesPerTarget {
                    throw CumulusError(
                        .limitExceeded,
                        "\(reference.recordID.recordName) already has \(owners) deleteSelf references; the limit is \(Limits.maxDeleteSelfReferencesPerTarget)",
                        recordID: id, field: field)
                }
            case .deleteSelf, .none:
                break
            }
        }
        try overlay.save(record, replacing: existing, changedKeys: RecordMerger.changedKeys(from: existing, to: record))
        if isShare { try planShare(save.share, record: record, tag: tag, &overlay) }
        if preparedContent, let prepared { derived[id] = prepared.content }
        let (newType, fields) = isShare ? (nil, []) : rules.schema.additions(for: record)
        if newType != nil || !fields.isEmpty {
            let grown = rules.schema.extended(type: record.recordType, with: (newType?.fields ?? []) + fields)
            rules.schema = EffectiveSchema(grown, environment: rules.schema.environment)
            rules.stamp = nil
        }
        return record
    }

    /// Throws `quotaExceeded` if whoever pays for `record` (``RecordUsage/payer(in:creator:)``),
    /// or its container, holds the quota already. The views are current as of every
    /// earlier commit (the planner runs in the writer's transaction), so a group of
    /// operations cannot slip past together.
    private func checkQuota(_ record: Record, _ txn: LMDBReadTransaction) throws {
        guard let quota = recordQuota else { return }
        let container = database.container
        if let payer = RecordUsage.payer(in: database, creator: record.creatorUserRecordID?.recordName), !payer.isEmpty {
            let held = try views.recordBytes(ofUser: payer, container: container, in: txn)
            if held >= quota.bytesPerUser {
                let whose = payer == actor ? "your records hold" : "the records of \(payer), who pays for this one, hold"
                throw CumulusError(
                    .quotaExceeded,
                    "\(whose) \(held) bytes in \(container), the most allowed (\(quota.bytesPerUser)); delete records "
                        + "to free space", recordID: record.recordID)
            }
        }
        let total = try views.recordBytes(ofContainer: container, in: txn)
        if total >= quota.bytesPerContainer {
            throw CumulusError(
                .quotaExceeded,
                "the records of container \(container) hold \(total) bytes, the most allowed (\(quota.bytesPerContainer)); "
                    + "nothing more can be saved until records are deleted", recordID: record.recordID)
        }
    }

    /// `error` as the actor may see it: a conflict carries the server's copy only to
    /// a caller who may read it. A type may grant WRITE without READ; such a writer
    /// learns that their copy is stale, never what the record holds (issue 40).
    private func conflict(_ error: CumulusError, readable existing: Record?, _ rules: SchemaContext) -> CumulusError {
        guard error.serverRecord != nil, let existing, database.scope == .public,
            !rules.schema.allows(
                .read, on: existing.recordType, roles: rules.roles, actor: actor,
                creator: existing.creatorUserRecordID?.recordName)
        else { return error }
        var hidden = error
        hidden.serverRecord = nil
        return hidden
    }

    /// Whether the actor may change or delete `record` (a public record): what
    /// ``checkGrant(_:_:_:)`` requires for writes.
    private func mayWrite(_ record: Record, _ rules: SchemaContext) -> Bool {
        rules.schema.allows(
            .write, on: record.recordType, roles: rules.roles, actor: actor,
            creator: record.creatorUserRecordID?.recordName)
    }

    /// Throws `permissionFailure` if `reference` (`validate` or `deleteSelf`, new in
    /// the record `source`) points at a public record the actor may not write. Such a
    /// reference gives its holder a say over the target: a `validate` one blocks the
    /// target's deletion, `deleteSelf` ones use up the target's 750 owner slots. In
    /// the public database, where anyone may hold a record, only someone who could
    /// change or delete the target may hold one (`Docs/SECURITY.md`, "Public records").
    /// A target that does not exist is left to the checks that follow.
    private func checkReferenceGrant(
        _ reference: Reference, field: String, from source: RecordID, _ rules: SchemaContext, _ overlay: inout PlanOverlay
    ) throws {
        guard let target = try overlay.record(reference.recordID), !mayWrite(target, rules) else { return }
        let action = reference.action == .validate ? "VALIDATE" : "DELETE_SELF"
        throw CumulusError(
            .permissionFailure,
            "a \(action) reference to \(reference.recordID.recordName) would give you a say over its deletion; in the "
                + "public database only its creator or a role with WRITE on \(target.recordType) may hold one "
                + "(use action NONE)",
            recordID: source, field: field)
    }

    /// Throws `permissionFailure` unless the actor may change or delete `existing`
    /// (a public record): a WRITE grant to one of their roles, or to `_creator` when
    /// they created it.
    private func checkGrant(_ permission: Grant.Permissions, _ existing: Record, _ rules: SchemaContext) throws {
        guard !rules.schema.allows(
            permission, on: existing.recordType, roles: rules.roles, actor: actor,
            creator: existing.creatorUserRecordID?.recordName)
        else { return }
        throw CumulusError(
            .permissionFailure,
            "only the record's creator or a role with WRITE on \(existing.recordType) may change or delete it in the public database",
            recordID: existing.recordID)
    }

    private func planDelete(
        _ delete: RecordDelete, tag: String, _ rules: SchemaContext, _ budget: WorkBudget, _ overlay: inout PlanOverlay
    ) throws {
        let id = delete.recordID
        guard let existing = try overlay.record(id) else {
            throw CumulusError(.unknownItem, "record \(id.recordName) does not exist", recordID: id)
        }
        if viaSharedDatabase {
            if Share.isShareType(existing.recordType) { return try planLeave(existing, &overlay) }
            try checkParticipantDelete(existing, &overlay)
        }
        // Access first: a conflict would hand back the server's copy.
        if database.scope == .public { try checkGrant(.write, existing, rules) }
        if case .ifTagMatches(let tag) = delete.mode, tag != existing.recordChangeTag {
            throw conflict(
                CumulusError(
                    .serverRecordChanged, "the record changed on the server since this copy was fetched",
                    recordID: id, serverRecord: existing),
                readable: existing, rules)
        }
        // Cascade through deleteSelf references, breadth first; a record already
        // taken is skipped, which is what ends cycles. Nothing changes until every
        // check has passed.
        // By name: references stay in their zone, so every victim is in `id`'s.
        var taken: Set<String> = [id.recordName]
        var victims: [(record: PlanOverlay.Deletable, cause: DeleteCause)] = [
            (PlanOverlay.Deletable(recordID: id, recordType: existing.recordType, outgoing: OutgoingReference.of(existing)),
             .direct)
        ]
        // Each victim's incoming references are read once, here: the validating ones
        // are checked once every victim is known (a holder that is a victim too is no
        // obstacle). They used to be read again for the check, from the plan's cache.
        var validating: [(holder: String, target: RecordID)] = []
        var head = 0
        while head < victims.count {
            try budget.spend()
            let owner = victims[head].record.recordID
            head += 1
            for edge in try overlay.incoming(owner).sorted(by: { UTF8Order.precedes($0.source, $1.source) }) {
                switch edge.action {
                case .deleteSelf:
                    let source = RecordID(recordName: edge.source, zoneID: owner.zoneID)
                    guard !taken.contains(edge.source), let victim = try overlay.deletable(source) else { continue }
                    taken.insert(edge.source)
                    victims.append((victim, .cascade(owner: owner)))
                case .validate:
                    validating.append((edge.source, owner))
                case .none:
                    continue
                }
            }
        }
        for (source, target) in validating where !taken.contains(source) {
            if try overlay.record(RecordID(recordName: source, zoneID: target.zoneID)) != nil {
                throw CumulusError(
                    .referenceViolation,
                    "\(source) holds a validating reference to \(target.recordName); delete or change it first",
                    recordID: id)
            }
        }
        overlay.reserveDeletions(victims.count)
        for victim in victims { try overlay.delete(victim.record, cause: victim.cause) }
        try planShareDeletions(victims.map(\.record.recordID), tag: tag, &overlay)
    }
}
