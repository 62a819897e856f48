import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// The state of a database as a modify operation being planned sees it: the views
/// (through the writer's transaction) with the operation's own changes laid over
/// them, and the events those changes produce.
///
/// A value type on purpose: copying it is a checkpoint (dictionaries are
/// copy-on-write), and assigning the copy back rolls an item or an atomic zone
/// back — events included — without touching storage.
struct PlanOverlay {
    /// A reference into a record: who points at it, and how.
    struct InEdge: Hashable {
        var action: Reference.Action
        var source: String
    }

    let views: Views
    let database: DatabaseID
    let transaction: LMDBReadTransaction
    /// Records read or saved so far.
    private var records: [RecordID: Record] = [:]
    /// Records found absent or deleted by this operation. Kept apart from `records`:
    /// a cascade of 100,000 put as many entries of a `Record?`-sized dictionary here,
    /// and growing it (its pages zeroed by the kernel) was ~6 % of the cascade.
    private var gone: Set<RecordID> = []
    // Incoming references are kept as the stored ones plus this operation's changes.
    // A save only needs to know whether one edge exists and how many deleteSelf
    // owners its target has; reading every referrer of a list with hundreds of items
    // on each single-record save was a third of planning. The whole set is read
    // only for cascades and validate checks.
    /// Stored incoming references of the targets whose whole set was asked for.
    private var storedIncoming: [RecordID: Set<InEdge>] = [:]
    /// This operation's changes per target: `true` present now, `false` removed.
    private var incomingChanges: [RecordID: [InEdge: Bool]] = [:]
    /// Stored `deleteSelf` owners per target, counted without decoding their names.
    private var storedDeleteSelfOwners: [RecordID: Int] = [:]
    /// This operation's change to each target's `deleteSelf` owner count.
    private var deleteSelfOwnerChange: [RecordID: Int] = [:]
    /// The events, in the order they apply.
    private(set) var events: [Event] = []
    /// Records saved or deleted by this operation (never tag-bumped).
    private(set) var touched: Set<RecordID> = []
    /// Targets whose incoming references changed, with the first source responsible.
    private var bumps: [RecordID: RecordID] = [:]
    /// The shares of each zone the plan has looked at, as the plan has left them.
    private var zoneShares: [ZoneID: [Share]] = [:]

    init(views: Views, database: DatabaseID, transaction: LMDBReadTransaction) {
        self.views = views
        self.database = database
        self.transaction = transaction
    }

    /// The key of `zone`, from the views' cache of derived keys (a SHA-256 otherwise).
    func zoneKey(_ zone: ZoneID) -> [UInt8] {
        views.zoneKeys.zone(database, zone)
    }

    /// The record as of this point of the operation, or `nil` if absent or deleted.
    mutating func record(_ id: RecordID) throws -> Record? {
        if let known = records[id] { return known }
        if gone.contains(id) { return nil }
        guard let stored = try views.record(id, in: database, transaction) else {
            gone.insert(id)
            return nil
        }
        records[id] = stored
        return stored
    }

    /// Who refers to `id`, as of this point of the operation.
    mutating func incoming(_ id: RecordID) throws -> Set<InEdge> {
        var edges: Set<InEdge>
        if let known = storedIncoming[id] {
            edges = known
        } else {
            edges = Set(try views.incoming(zoneKey(id.zoneID), id.recordName, in: transaction).map {
                InEdge(action: $0.action, source: $0.source)
            })
            // Most records no one refers to (a cascade's leaves, 99 in 100 of its
            // victims): not remembering them spares a cascade as many entries, whose
            // growth rehashed every ID; asked again, the graph answers as cheaply.
            if !edges.isEmpty { storedIncoming[id] = edges }
        }
        for (edge, present) in incomingChanges[id] ?? [:] {
            if present { edges.insert(edge) } else { edges.remove(edge) }
        }
        return edges
    }

    /// How many `deleteSelf` references point at `id`, as of this point of the operation.
    mutating func deleteSelfOwnerCount(_ id: RecordID) throws -> Int {
        let stored: Int
        if let known = storedDeleteSelfOwners[id] {
            stored = known
        } else {
            stored = try views.incomingCount(zoneKey(id.zoneID), id.recordName, action: .deleteSelf, in: transaction)
            storedDeleteSelfOwners[id] = stored
        }
        return stored + (deleteSelfOwnerChange[id] ?? 0)
    }

    /// Whether `edge` points at `target` as of this point of the operation. Without
    /// `stored` the views cannot hold the edge (its source is not stored), so only the
    /// plan's own changes are asked.
    private mutating func hasIncoming(_ edge: InEdge, at target: RecordID, stored: Bool = true) throws -> Bool {
        if let present = incomingChanges[target]?[edge] { return present }
        guard stored else { return false }
        if let stored = storedIncoming[target] { return stored.contains(edge) }
        return try views.refers(
            edge.source, to: target.recordName, action: edge.action, zoneKey: zoneKey(target.zoneID), in: transaction)
    }

    /// The shares of `zone` at this point of the operation.
    mutating func shares(inZone zone: ZoneID) throws -> [Share] {
        if let known = zoneShares[zone] { return known }
        let stored = try views.shares(inZone: zone, of: database, transaction)
        zoneShares[zone] = stored
        return stored
    }

    /// Records `share` as saved: its event follows the share record's own.
    mutating func saveShare(_ share: Share) throws {
        var shares = try shares(inZone: share.zoneID)
        shares.removeAll { $0.recordName == share.recordName }
        shares.append(share)
        zoneShares[share.zoneID] = shares
        events.append(.shareSaved(database: database, share: share))
    }

    /// Records the share `recordName` of `zone` as deleted.
    mutating func deleteShare(_ recordName: String, in zone: ZoneID) throws {
        var shares = try shares(inZone: zone)
        shares.removeAll { $0.recordName == recordName }
        zoneShares[zone] = shares
        events.append(.shareDeleted(database: database, zoneID: zone, recordName: recordName))
    }

    /// The parent name of record `name` of `zone`, as the plan has it (for ``ShareScope``).
    mutating func parentName(_ name: String, in zone: ZoneID) throws -> String? {
        guard let parent = try record(RecordID(recordName: name, zoneID: zone))?.parent,
            parent.recordID.zoneID == zone
        else { return nil }
        return parent.recordID.recordName
    }

    /// Records `new` as saved (replacing `old`), updating the reference graph.
    mutating func save(_ new: Record, replacing old: Record?, changedKeys: [String]) throws {
        let id = new.recordID
        let oldEdges = Set(old.map(OutgoingReference.of) ?? [])
        let newEdges = Set(OutgoingReference.of(new))
        for edge in oldEdges.subtracting(newEdges) { try removeEdge(edge, from: id) }
        for edge in newEdges.subtracting(oldEdges) { try addEdge(edge, from: id, sourceIsNew: old == nil) }
        records[id] = new
        gone.remove(id)
        touched.insert(id)
        events.append(.recordSaved(database: database, record: new, changedKeys: changedKeys))
    }

    /// What deleting `id` needs to know — its type and the references it holds — or
    /// `nil` if it is absent or deleted. A record this operation has not read is not
    /// decoded: its type comes from the stored header and its references from the
    /// graph, which is what lets a cascade of 100,000 records skip 100,000 decodes.
    mutating func deletable(_ id: RecordID) throws -> Deletable? {
        if let known = records[id] {
            return Deletable(recordID: id, recordType: known.recordType, outgoing: OutgoingReference.of(known))
        }
        if gone.contains(id) { return nil }
        let zoneKey = zoneKey(id.zoneID)
        guard let type = try views.recordType(zoneKey: zoneKey, name: id.recordName, transaction) else {
            gone.insert(id)
            return nil
        }
        return Deletable(recordID: id, recordType: type, outgoing: try views.outgoing(zoneKey, id.recordName, in: transaction))
    }

    /// A record about to be deleted, as much of it as deleting needs.
    struct Deletable {
        let recordID: RecordID
        let recordType: String
        let outgoing: [OutgoingReference]
    }

    /// Makes room for `count` more deletions at once: a cascade knows its size before
    /// it deletes, and growing by doublings moved and zeroed twice the memory.
    mutating func reserveDeletions(_ count: Int) {
        reserveEvents(count)
        gone.reserveCapacity(gone.count + count)
    }

    /// Makes room for `count` more saves at once, for the same reason: a
    /// 400-record operation grew these tables by doublings, rehashing every ID each
    /// time.
    mutating func reserveSaves(_ count: Int) {
        reserveEvents(count)
        records.reserveCapacity(records.count + count)
    }

    /// Room for `count` more events and touched records, the part both reservations
    /// share. Events grow at least geometrically, so repeated reservations stay
    /// amortized.
    private mutating func reserveEvents(_ count: Int) {
        if events.capacity - events.count < count { events.reserveCapacity(max(events.count + count, 2 * events.capacity)) }
        touched.reserveCapacity(touched.count + count)
    }

    /// Records `record` as deleted for `cause`, removing the references it held.
    mutating func delete(_ record: Deletable, cause: DeleteCause) throws {
        let id = record.recordID
        for edge in record.outgoing { try removeEdge(edge, from: id) }
        records[id] = nil
        gone.insert(id)
        touched.insert(id)
        events.append(.recordDeleted(database: database, recordID: id, recordType: record.recordType, cause: cause))
    }

    /// Gives every record whose incoming references changed — and that this
    /// operation neither saved nor deleted — the new change tag, as its own event.
    /// The last step of a plan. Without `allowed` it only asks whether each target
    /// exists, without decoding it (the views patch the tag into the stored bytes);
    /// with it, a target is read and bumped only if `allowed` accepts it (the public
    /// database bumps only records the actor may write).
    mutating func emitTagBumps(tag: String, allowing allowed: ((Record) -> Bool)? = nil) throws {
        let targets = bumps.keys.filter { !touched.contains($0) }.sorted()
        for target in targets {
            guard let source = bumps[target] else { continue }
            if let allowed {
                guard let stored = try record(target), allowed(stored) else { continue }
            } else {
                let exists =
                    try records[target] != nil || (!gone.contains(target) && views.recordExists(target, in: database, transaction))
                guard exists else { continue }
            }
            events.append(.changeTagBumped(database: database, recordID: target, changeTag: tag, source: source))
        }
        bumps = [:]
    }

    /// With `sourceIsNew` the source does not exist at this point of the plan: the
    /// views hold no edge of it (they hold the edges of stored records only, and a
    /// stored record this plan deleted had its edges removed here), so only this
    /// plan's own changes are asked, not the stored graph: a new record's save reads
    /// nothing for its references.
    private mutating func addEdge(_ edge: OutgoingReference, from source: RecordID, sourceIsNew: Bool) throws {
        let target = RecordID(recordName: edge.targetName, zoneID: source.zoneID)
        let inEdge = InEdge(action: edge.action, source: source.recordName)
        if try !hasIncoming(inEdge, at: target, stored: !sourceIsNew) {
            incomingChanges[target, default: [:]][inEdge] = true
            if edge.action == .deleteSelf { deleteSelfOwnerChange[target, default: 0] += 1 }
        }
        if bumps[target] == nil { bumps[target] = source }
    }

    private mutating func removeEdge(_ edge: OutgoingReference, from source: RecordID) throws {
        let target = RecordID(recordName: edge.targetName, zoneID: source.zoneID)
        let inEdge = InEdge(action: edge.action, source: source.recordName)
        if try hasIncoming(inEdge, at: target) {
            incomingChanges[target, default: [:]][inEdge] = false
            if edge.action == .deleteSelf { deleteSelfOwnerChange[target, default: 0] -= 1 }
        }
        if bumps[target] == nil { bumps[target] = source }
    }
}
