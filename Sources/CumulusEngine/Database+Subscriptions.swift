import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Subscriptions (`Docs/DATA-MODEL.md`, "Subscriptions and notifications"). A
/// subscription belongs to the user who
/// saves it; saving and deleting are log events, so replay and followers have them,
/// and the views match every later commit against them in the commit's transaction.
///
/// Subscription IDs are unique per database. In the public database, where several
/// users subscribe, an ID another user holds is refused (`permissionFailure`) rather
/// than replaced, and each user sees only their own subscriptions.
extension Database {
    /// Saves (creates or replaces) subscriptions; per subscription, the subscription
    /// as saved (owned by `actor`) or why it was refused. A user holds at most
    /// `maxPerUser` subscriptions in one database (``Subscription/maxPerUser``).
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    public func saveSubscriptions(
        _ subscriptions: [Subscription], maxPerUser: Int = Subscription.maxPerUser, as actor: String?,
        requestID: String = UUID.random().uuidString
    ) async throws
        -> [(subscriptionID: String, result: Result<Subscription, CumulusError>)]
    {
        let actor = try AccessPolicy.checkWrite(id, actor: actor)
        var prepared: [SubscriptionPlanner.PreparedSave] = []
        var seen = Set<String>()
        for subscription in subscriptions {
            guard seen.insert(subscription.subscriptionID).inserted else {
                throw CumulusError(
                    .invalidArguments, "subscription \(subscription.subscriptionID) appears twice; one operation per subscription")
            }
            do {
                let normalized = try normalize(subscription, owner: actor)
                prepared.append(.success((normalized, try SubscriptionCodec.encode(normalized))))
            } catch let error as CumulusError {
                prepared.append(.failure(error))
            }
        }
        let items = prepared
        let planner = SubscriptionPlanner(views: container.views, database: id, actor: actor, requestID: requestID)
        let (_, results) = try await container.writer.submit { context in
            try planner.planSaves(items, maxPerUser: maxPerUser, context)
        }
        return zip(subscriptions.map(\.subscriptionID), results).map { ($0, $1) }
    }

    /// Deletes subscriptions by ID: per ID, success or `unknownItem`.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    public func deleteSubscriptions(_ subscriptionIDs: [String], as actor: String?, requestID: String = UUID.random().uuidString)
        async throws
        -> [(subscriptionID: String, result: Result<Void, CumulusError>)]
    {
        let actor = try AccessPolicy.checkWrite(id, actor: actor)
        let planner = SubscriptionPlanner(views: container.views, database: id, actor: actor, requestID: requestID)
        let (_, results) = try await container.writer.submit { context in try planner.planDeletes(subscriptionIDs, context) }
        return zip(subscriptionIDs, results).map { ($0, $1) }
    }

    /// Fetches subscriptions by ID: per ID, the subscription or `unknownItem`.
    public func fetchSubscriptions(_ subscriptionIDs: [String], as actor: String?) throws
        -> [(subscriptionID: String, result: Result<Subscription, CumulusError>)]
    {
        let actor = try subscriptionReader(actor)
        let views = container.views
        let database = id
        return try container.store.environment.read { txn in
            try subscriptionIDs.map { subscriptionID in
                guard let stored = try views.subscription(subscriptionID, in: database, txn), stored.owner == actor else {
                    return (subscriptionID, .failure(SubscriptionPlanner.unknown(subscriptionID)))
                }
                return (subscriptionID, .success(stored))
            }
        }
    }

    /// Every subscription `actor` holds in this database, by ID.
    public func allSubscriptions(as actor: String?) throws -> [Subscription] {
        let actor = try subscriptionReader(actor)
        let views = container.views
        let database = id
        return try container.store.environment.read { txn in
            try views.subscriptions(in: database, txn).filter { $0.owner == actor }
        }
    }

    /// How far behind the log each subscription is: the commit that last fired it
    /// and the log's head. `unknownItem` for IDs `actor` does not hold.
    public func subscriptionStatus(_ subscriptionIDs: [String], as actor: String?) throws
        -> [(subscriptionID: String, result: Result<SubscriptionStatus, CumulusError>)]
    {
        let actor = try subscriptionReader(actor)
        let views = container.views
        let database = id
        let store = container.store
        return try store.environment.read { txn in
            let head = store.head.sequence
            return try subscriptionIDs.map { subscriptionID in
                guard let stored = try views.subscription(subscriptionID, in: database, txn), stored.owner == actor else {
                    return (subscriptionID, .failure(SubscriptionPlanner.unknown(subscriptionID)))
                }
                let last = try views.lastFired(subscriptionID, in: database, txn)
                return (subscriptionID, .success(SubscriptionStatus(subscriptionID: subscriptionID, lastFiredSequence: last, logHead: head)))
            }
        }
    }

    // MARK: - Helpers

    /// Subscriptions are per user, so reading them needs a signed-in user even in
    /// the public database.
    private func subscriptionReader(_ actor: String?) throws -> String {
        try AccessPolicy.checkRead(id, actor: actor)
        guard let actor, !actor.isEmpty else {
            throw CumulusError(.notAuthenticated, "sign in to use subscriptions")
        }
        return actor
    }

    /// The subscription as stored: owned by `owner`, zones normalized like records',
    /// references in the query normalized like a query's, and valid for this
    /// database's scope (`Docs/DATA-MODEL.md`, "Subscriptions and notifications").
    private func normalize(_ subscription: Subscription, owner: String) throws -> Subscription {
        var normalized = subscription
        normalized.owner = owner
        let normalizer = Normalizer(database: id)
        switch subscription.kind {
        case .query(var query, let zoneID, let firesOn, let firesOnce):
            guard id.scope != .shared else {
                throw CumulusError(.invalidArguments, "query subscriptions exist only in the public and private databases")
            }
            query.filters = query.filters.map { filter in
                var copy = filter
                copy.value = normalizeReferences(filter.value)
                return copy
            }
            // Matched in the writer against every save of the type: bounded tighter
            // than a query.
            try QueryBounds.check(query, maxFilters: QueryBounds.maxSubscriptionFilters)
            normalized.kind = .query(query, zoneID: zoneID.map(normalizer.zone), firesOn: firesOn, firesOnce: firesOnce)
        case .zone(let zoneID, let recordType):
            guard id.scope == .private else {
                throw CumulusError(.invalidArguments, "zone subscriptions exist only in the private database")
            }
            normalized.kind = .zone(normalizer.zone(zoneID), recordType: recordType)
        case .database:
            guard id.scope != .public else {
                throw CumulusError(.invalidArguments, "database subscriptions exist only in the private and shared databases")
            }
        }
        try normalized.validate()
        do {
            // Reject definitions the log could not store (a query value with no canonical form).
            _ = try SubscriptionCodec.encode(normalized)
        } catch let error as CumulusError {
            throw CumulusError(.invalidArguments, error.message)
        }
        return normalized
    }
}
