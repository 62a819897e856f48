import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Turns subscription saves and deletions into a commit (the door for subscriptions,
/// beside ``ModifyPlanner`` for records and ``ZonePlanner`` for zones): runs on the
/// writer thread inside the group's transaction, reading the views as they stand after
/// every earlier commit, and writes nothing itself. What needs no stored state (the
/// definition's rules, its encoding) is checked before, on the caller's task
/// (`Database.normalize`); what does (the zone exists, the ID is not another user's,
/// the user's count) is checked here. Every event goes into one commit under the
/// request's ID; an item that fails changes nothing and keeps its own error.
struct SubscriptionPlanner {
    let views: Views
    let database: DatabaseID
    let actor: String
    let requestID: String

    /// A save checked before planning: the subscription and its stored definition.
    typealias PreparedSave = Result<(subscription: Subscription, definition: [UInt8]), CumulusError>

    /// Plans saves: each subscription as saved, or why it was refused. A user holds
    /// at most `maxPerUser` subscriptions in one database; replacing one they hold does
    /// not count again.
    func planSaves(_ items: [PreparedSave], maxPerUser: Int, _ context: LogWriter.PlanContext) throws
        -> (CommitRequest?, [Result<Subscription, CumulusError>])
    {
        var events: [Event] = []
        var results: [Result<Subscription, CumulusError>] = []
        // The IDs the actor holds here, counted against `maxPerUser`.
        var held = Set(
            try views.subscriptions(in: database, context.transaction).filter { $0.owner == actor }.map(\.subscriptionID))
        for item in items {
            do {
                let (subscription, definition) = try item.get()
                try checkStored(subscription, context.transaction)
                if !held.contains(subscription.subscriptionID) {
                    guard held.count < maxPerUser else {
                        throw CumulusError(
                            .limitExceeded,
                            "you hold \(held.count) subscriptions in this database, the most one user may; delete some first")
                    }
                    held.insert(subscription.subscriptionID)
                }
                events.append(
                    .subscriptionSaved(database: database, subscriptionID: subscription.subscriptionID, definition: definition))
                results.append(.success(subscription))
            } catch let error as CumulusError {
                results.append(.failure(error))
            }
        }
        return (request(events), results)
    }

    /// Plans deletions by ID: per ID, success or `unknownItem` (also for another
    /// user's subscription, which the actor must not learn exists).
    func planDeletes(_ subscriptionIDs: [String], _ context: LogWriter.PlanContext) throws
        -> (CommitRequest?, [Result<Void, CumulusError>])
    {
        var events: [Event] = []
        var results: [Result<Void, CumulusError>] = []
        var deleted = Set<String>()
        for subscriptionID in subscriptionIDs {
            let stored = try views.subscription(subscriptionID, in: database, context.transaction)
            guard let stored, stored.owner == actor, deleted.insert(subscriptionID).inserted else {
                results.append(.failure(Self.unknown(subscriptionID)))
                continue
            }
            events.append(.subscriptionDeleted(database: database, subscriptionID: subscriptionID))
            results.append(.success(()))
        }
        return (request(events), results)
    }

    /// The answer for a subscription the actor does not hold.
    static func unknown(_ subscriptionID: String) -> CumulusError {
        CumulusError(.unknownItem, "subscription \(subscriptionID) does not exist")
    }

    /// The commit of `events`, if there are any.
    private func request(_ events: [Event]) -> CommitRequest? {
        events.isEmpty ? nil : CommitRequest(actor: actor, requestID: requestID, events: events)
    }

    /// Checks against stored state: the zone exists, and the ID is not another user's.
    private func checkStored(_ subscription: Subscription, _ txn: LMDBReadTransaction) throws {
        let zoneID: ZoneID? =
            switch subscription.kind {
            case .query(_, let zoneID, _, _): zoneID
            case .zone(let zoneID, _): zoneID
            case .database: nil
            }
        if let zoneID, !zoneID.isDefaultZone, try views.zone(zoneID, in: database, txn) == nil {
            throw CumulusError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
        }
        if let existing = try views.subscription(subscription.subscriptionID, in: database, txn),
            existing.owner != subscription.owner
        {
            throw CumulusError(
                .permissionFailure, "subscription ID \(subscription.subscriptionID) is taken by another user; choose another")
        }
    }
}
