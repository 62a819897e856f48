import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Turns a zone modify into one commit (the door for zones, beside ``ModifyPlanner``
/// for records): runs on the writer thread inside the group's transaction, reading
/// the views as they stand after every earlier commit, and writes nothing itself.
///
/// Operations apply in order, each seeing the ones before it: a zone created earlier
/// in the operation exists for a later delete, one deleted does not for a later
/// save. Every event goes into one commit under the request's ID, as a records
/// modify does; an item that fails changes nothing and keeps its own error.
struct ZonePlanner {
    let views: Views
    let database: DatabaseID
    let actor: String
    /// The operations, their zone IDs normalized.
    let operations: [ZoneOperation]
    /// Errors found before planning (validation), by item.
    let errors: [Int: CumulusError]
    let requestID: String

    /// Each operation's outcome: the zone as saved, or `nil` for a deletion.
    typealias Outcome = Result<Zone?, CumulusError>

    /// Checks what needs no stored state: a save's zone must be a custom zone of
    /// this private database's owner; the default zone cannot be deleted.
    static func validate(_ operation: ZoneOperation, in database: DatabaseID) throws {
        switch operation {
        case .save(let zoneID):
            try NameRules.checkZoneID(zoneID)
            if zoneID.isDefaultZone {
                throw CumulusError(.invalidArguments, "the default zone always exists and cannot be saved")
            }
            if database.scope != .private {
                throw CumulusError(.invalidArguments, "custom zones exist only in private databases, not the \(database.scope) one")
            }
            // A private database's zones are its owner's: naming another user as
            // owner would make a zone that looks like theirs (issue 40).
            if zoneID.ownerName != database.owner {
                throw CumulusError(
                    .permissionFailure,
                    "a zone you create is yours: its ownerName must be your user record name (\(database.owner)) or "
                        + "\(ZoneID.defaultOwnerName), not \(zoneID.ownerName)")
            }
        case .delete(let zoneID):
            if zoneID.isDefaultZone { throw CumulusError(.invalidArguments, "the default zone cannot be deleted") }
        }
    }

    /// Plans the operation: the commit to append (if anything changes) and each
    /// operation's outcome, in order.
    func plan(_ context: LogWriter.PlanContext) throws -> (CommitRequest?, [Outcome]) {
        var events: [Event] = []
        var outcomes: [Outcome] = []
        // What this operation changed so far, laid over the views: a zone, or `nil`
        // for one it deleted.
        var changed: [ZoneID: Zone?] = [:]
        func current(_ zoneID: ZoneID) throws -> Zone? {
            if let known = changed[zoneID] { return known }
            return try views.zone(zoneID, in: database, context.transaction)?.zone
        }
        for (index, operation) in operations.enumerated() {
            if let error = errors[index] {
                outcomes.append(.failure(error))
                continue
            }
            switch operation {
            case .save(let zoneID):
                if let existing = try current(zoneID) {
                    outcomes.append(.success(existing))
                } else {
                    let zone = Zone(zoneID: zoneID)
                    changed[zoneID] = zone
                    events.append(.zoneSaved(database: database, zone: zone))
                    outcomes.append(.success(zone))
                }
            case .delete(let zoneID):
                guard try current(zoneID) != nil else {
                    outcomes.append(.failure(CumulusError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")))
                    continue
                }
                changed[zoneID] = .some(nil)
                events.append(.zoneDeleted(database: database, zoneID: zoneID))
                outcomes.append(.success(nil))
            }
        }
        let request = events.isEmpty ? nil : CommitRequest(actor: actor, requestID: requestID, events: events)
        return (request, outcomes)
    }
}
