import CumulusLog
import CumulusModel
import CumulusStorage

/// Subscriptions and notifications (`Docs/DATA-MODEL.md`, "Subscriptions and notifications"), derived inside ``Views/apply(_:in:)``:
/// each record event is matched against the subscriptions that could fire (found
/// through ``SubscriptionIndex``) while the views still hold the state *before* the
/// event, and every notification is written in the commit's own transaction — so a
/// notification exists exactly when its commit does, a rebuild derives the same
/// ones, and no crash can leave one for a commit that was lost.
extension Views {
    /// What one commit has fired so far: zone and database subscriptions fire once
    /// per commit, however many of its events touch them.
    struct Firing {
        let commit: Commit
        /// database key ‖ subscription ID of the zone/database subscriptions fired.
        var fired: Set<HashedBytes> = []
        /// The touch prefixes already looked up in this commit.
        var touched: Set<HashedBytes> = []
        /// Filter evaluations query subscriptions may still take in this commit
        /// (``matchBudgetPerCommit``).
        var matchBudget = Views.matchBudgetPerCommit
        /// database key ‖ subscription ID of the subscriptions told `pruned` already.
        var pruned: Set<HashedBytes> = []

        init(commit: Commit) { self.commit = commit }

        func databaseSequence(_ database: DatabaseID) -> UInt64 {
            commit.databaseSequences.first { $0.database == database }?.sequence ?? 0
        }
    }

    /// Filter evaluations all query subscriptions together may take in one commit
    /// (issue 40). Matching runs in the single writer's transaction, so without a bound
    /// many users' subscriptions on one type would hold every other user's save. Past
    /// it, a subscription the commit would have been matched against is not; its owner
    /// gets one `pruned` notification for that subscription and commit instead (only
    /// for records they may read), so nothing is missed silently. Counted in evaluations, not time, so a
    /// rebuild derives exactly the same notifications.
    public static let matchBudgetPerCommit = 100_000

    /// Notifications kept per user: the newest, each write past it dropping the oldest.
    /// A client further behind than this misses the oldest and fetches changes with
    /// its change tokens, as a CloudKit client does after pruned notifications.
    public static let notificationsKeptPerUser: UInt64 = 100_000

    /// Fires the subscriptions `event` matches; call before applying the event.
    func notify(_ event: Event, _ firing: inout Firing, _ txn: LMDBWriteTransaction) throws {
        switch event {
        case .recordSaved(let database, let record, _):
            // The record is tokenized once for every subscription's token filters.
            var tokens = RecordTokens()
            try fireQueries(
                database, recordID: record.recordID, recordType: record.recordType, matching: record, firing: &firing, txn
            ) {
                old, subscription, query, firesOn, searchable in
                let matches = QueryEvaluator.matches(record, query, searchable: searchable, tokens: &tokens)
                if old == nil { return firesOn.contains(.creation) && matches ? .recordCreated : nil }
                return firesOn.contains(.update) && matches ? .recordUpdated : nil
            }
            try touch(database, record.recordID.zoneID, recordType: record.recordType, &firing, txn)
        case .recordDeleted(let database, let recordID, let recordType, _):
            var tokens = RecordTokens()
            try fireQueries(database, recordID: recordID, recordType: recordType, matching: nil, firing: &firing, txn) {
                old, subscription, query, firesOn, searchable in
                guard firesOn.contains(.deletion), let old,
                    QueryEvaluator.matches(old, query, searchable: searchable, tokens: &tokens)
                else { return nil }
                return .recordDeleted
            }
            try touch(database, recordID.zoneID, recordType: recordType, &firing, txn)
        case .zoneSaved(let database, let zone):
            try touch(database, zone.zoneID, recordType: nil, &firing, txn)
        case .zoneDeleted(let database, let zoneID):
            try touch(database, zoneID, recordType: nil, &firing, txn)
        case .shareSaved(let database, let share):
            // Whoever gains or loses the zone sees their shared database change.
            let old = try self.share(share.recordName, zoneID: share.zoneID, in: database, txn)
            let users = Set(((old?.participants ?? []) + share.participants).map(\.userRecordName))
            try touchSharedDatabases(of: users, database, share.zoneID, &firing, txn)
        case .shareDeleted(let database, let zoneID, let recordName):
            let old = try share(recordName, zoneID: zoneID, in: database, txn)
            try touchSharedDatabases(of: Set(old?.participants.map(\.userRecordName) ?? []), database, zoneID, &firing, txn)
        case .changeTagBumped, .subscriptionSaved, .subscriptionDeleted, .dictionaryInstalled, .schemaChanged,
            .schemaExtended, .rolesAssigned, .epochBegan:
            break  // a tag bump is a consequence of another change, which fires on its own
        }
    }

    /// Query subscriptions on `recordType`: `decide` gets the record as it was before
    /// the event (`nil` if none) and returns the reason to fire, if any.
    /// `matching` is the version whose field values select equality-indexed
    /// subscriptions: the new record for a save, `nil` (the old one) for a delete.
    private func fireQueries(
        _ database: DatabaseID, recordID: RecordID, recordType: String, matching: Record?, firing: inout Firing,
        _ txn: LMDBWriteTransaction,
        decide: (Record?, Subscription, Query, FiresOn, (String) -> Bool) -> SubscriptionNotification.Reason?
    ) throws {
        let databaseKey = zoneKeys.database(database)
        let prefix = SubscriptionIndex.queryPrefix(databaseKey, recordType: recordType)
        var ids = try subscriptionIDs(under: prefix, txn)
        let valuePrefix = SubscriptionIndex.valuePrefix(databaseKey, recordType: recordType)
        var anyByValue = false
        try txn.scan(tables.subscriptionIndex, prefix: valuePrefix) { _, _ in
            anyByValue = true
            return false
        }
        guard !ids.isEmpty || anyByValue else { return }
        // Read the previous version only when some subscription could care.
        let old = try record(recordID, in: database, txn)
        // `self CONTAINS` in a subscription reads the words the text index would.
        let schema = try self.schema(SchemaID(database), in: txn)
        let searchable = schema.typeIndexes(recordType).isSearchable
        if anyByValue, let version = matching ?? old {
            for (field, value) in version.fields {
                let fieldPrefix = valuePrefix + IndexKeys.hash8(field)
                for element in value.scalars {
                    guard let encoded = OrderedEncoding.encoded(element) else { continue }
                    ids += try subscriptionIDs(under: fieldPrefix + encoded, txn)
                }
            }
            // Field order is per process: sort, so notifications come out in the same
            // order on every replay.
            ids = Set(ids).sorted(by: UTF8Order.precedes)
        }
        // Each subscriber's roles, read once per event.
        var rolesByOwner: [String: Set<String>] = [:]
        for id in ids {
            guard let subscription = try storedSubscription(databaseKey, id, txn),
                case .query(let query, let zoneID, let firesOn, let firesOnce) = subscription.kind,
                zoneID.map({ $0 == recordID.zoneID }) ?? true
            else { continue }
            // A subscriber hears only of records they may read (issue 40): judged on the
            // version saved, or for a deletion on the one before it. Nothing else is
            // matched, so a filter on a hidden record's field is no oracle for its
            // values, and a `firesOnce` subscription is not used up by it. Private
            // databases are their owner's, who reads everything in them.
            if database.scope == .public {
                guard let judged = matching ?? old else { continue }
                let owner = subscription.owner
                let roles = try rolesByOwner[owner]
                    ?? EffectiveSchema.roles(of: owner, assigned: self.roles(of: owner, in: SchemaID(database), txn))
                rolesByOwner[owner] = roles
                guard schema.allows(
                    .read, on: judged.recordType, roles: roles, actor: owner,
                    creator: judged.creatorUserRecordID?.recordName)
                else { continue }
            }
            let stateKey = databaseKey + Array(id.utf8)
            if firesOnce, try txn.contains(tables.subscriptionsFired, key: stateKey) { continue }
            let cost = max(1, query.filters.count)
            guard firing.matchBudget >= cost else {
                if firing.pruned.insert(HashedBytes(stateKey)).inserted {
                    try emit(
                        subscription, reason: .pruned, database: database, zoneID: recordID.zoneID, recordID: nil,
                        firing: firing, txn)
                }
                continue
            }
            firing.matchBudget -= cost
            guard let reason = decide(old, subscription, query, firesOn, searchable) else { continue }
            try emit(
                subscription, reason: reason, database: database, zoneID: recordID.zoneID, recordID: recordID,
                firing: firing, txn)
            if firesOnce {
                var value = BinaryWriter(capacity: 96)
                value.u64(firing.commit.sequence)
                value.databaseID(database)
                value.string(id)
                try txn.put(tables.subscriptionsFired, key: stateKey, value: value.bytes)
            }
        }
    }

    /// Zone and database subscriptions a change in `zoneID` fires (once per commit each).
    private func touch(
        _ database: DatabaseID, _ zoneID: ZoneID, recordType: String?, _ firing: inout Firing, _ txn: LMDBWriteTransaction
    ) throws {
        // From the cache: called for every record event of a commit, and a key is a SHA-256.
        let databaseKey = zoneKeys.database(database)
        let zoneKey = zoneKeys.zone(database, zoneID)
        for prefix in SubscriptionIndex.touchPrefixes(databaseKey, zoneKey: zoneKey, recordType: recordType)
        where firing.touched.insert(HashedBytes(prefix)).inserted {
            for id in try subscriptionIDs(under: prefix, txn) {
                let firedKey = databaseKey + Array(id.utf8)
                guard firing.fired.insert(HashedBytes(firedKey)).inserted,
                    let subscription = try storedSubscription(databaseKey, id, txn)
                else { continue }
                switch subscription.kind {
                case .zone:
                    try emit(subscription, reason: .recordZone, database: database, zoneID: zoneID, recordID: nil, firing: firing, txn)
                case .database:
                    try emit(subscription, reason: .database, database: database, zoneID: nil, recordID: nil, firing: firing, txn)
                case .query:
                    continue
                }
            }
        }
        // A shared zone's change is also a change of each participant's shared database.
        if database.scope == .private, !zoneID.isDefaultZone {
            let users = try shares(inZone: zoneID, of: database, txn).flatMap { share in
                share.participants.map(\.userRecordName).filter { share.access(for: $0) != nil }
            }
            try touchSharedDatabases(of: Set(users), database, zoneID, &firing, txn)
        }
    }

    /// Fires the subscriptions of `users`' shared databases (the owner's excepted) for
    /// a change of `zoneID` of `owner`.
    private func touchSharedDatabases(
        of users: Set<String>, _ owner: DatabaseID, _ zoneID: ZoneID, _ firing: inout Firing, _ txn: LMDBWriteTransaction
    ) throws {
        for user in users.sorted(by: UTF8Order.precedes) where user != owner.owner {
            let shared = DatabaseID(container: owner.container, environment: owner.environment, scope: .shared, owner: user)
            try touch(shared, zoneID, recordType: nil, &firing, txn)
        }
    }

    /// Appends a notification to the owner's stream and records when the subscription fired.
    private func emit(
        _ subscription: Subscription, reason: SubscriptionNotification.Reason, database: DatabaseID, zoneID: ZoneID?,
        recordID: RecordID?, firing: Firing, _ txn: LMDBWriteTransaction
    ) throws {
        let userKey = SubscriptionIndex.userKey(subscription.owner)
        let head = try txn.withValue(tables.notificationHeads, key: userKey) { buffer -> UInt64 in
            var reader = BinaryReader(buffer, context: "notification head")
            return try reader.u64()
        } ?? 0
        let notification = SubscriptionNotification(
            sequence: head + 1, subscriptionID: subscription.subscriptionID, reason: reason, database: database,
            zoneID: zoneID, recordID: recordID, commitSequence: firing.commit.sequence,
            databaseSequence: firing.databaseSequence(database))
        try txn.put(
            tables.notifications, key: SubscriptionIndex.notificationKey(userKey, head + 1),
            value: NotificationCodec.encode(notification))
        var value = BinaryWriter(capacity: 8)
        value.u64(head + 1)
        try txn.put(tables.notificationHeads, key: userKey, value: value.bytes)
        // Only the newest are kept: the table cannot grow without end for a user who
        // never reads (issue 40). Deterministic, so a rebuild keeps the same ones.
        if head + 1 > Self.notificationsKeptPerUser {
            _ = try txn.delete(
                tables.notifications, key: SubscriptionIndex.notificationKey(userKey, head + 1 - Self.notificationsKeptPerUser))
        }
        var state = BinaryWriter(capacity: 8)
        state.u64(firing.commit.sequence)
        try txn.put(
            tables.subscriptionState, key: FeedKeys.database(database) + Array(subscription.subscriptionID.utf8),
            value: state.bytes)
    }

    /// The subscription IDs under an index prefix (the ID is the key's tail).
    private func subscriptionIDs(under prefix: [UInt8], _ txn: LMDBReadTransaction) throws -> [String] {
        var ids: [String] = []
        try txn.scan(tables.subscriptionIndex, prefix: prefix) { key, _ in
            ids.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[prefix.count...]), as: UTF8.self))
            return true
        }
        return ids
    }

    private func storedSubscription(_ databaseKey: [UInt8], _ id: String, _ txn: LMDBReadTransaction) throws -> Subscription? {
        guard let definition = try txn.get(tables.subscriptions, key: databaseKey + Array(id.utf8)) else { return nil }
        return try subscriptionCache.subscription(definition)
    }

    // MARK: - Saving and deleting subscriptions

    /// Applies `subscriptionSaved`: the definition, its index entry, and a fresh
    /// firing state (a replaced subscription starts over).
    func saveSubscription(_ database: DatabaseID, _ id: String, definition: [UInt8], _ txn: LMDBWriteTransaction) throws {
        try removeSubscription(database, id, txn)
        let subscription = try subscriptionCache.subscription(definition)
        try txn.put(tables.subscriptions, key: ViewKeys.subscription(database, id), value: definition)
        for key in SubscriptionIndex.keys(subscription, in: database) {
            try txn.put(tables.subscriptionIndex, key: key, value: [UInt8]())
        }
    }

    /// Applies `subscriptionDeleted` (and the first half of a replacement).
    func removeSubscription(_ database: DatabaseID, _ id: String, _ txn: LMDBWriteTransaction) throws {
        let key = ViewKeys.subscription(database, id)
        if let old = try txn.get(tables.subscriptions, key: key) {
            let subscription = try subscriptionCache.subscription(old)
            for indexKey in SubscriptionIndex.keys(subscription, in: database) {
                _ = try txn.delete(tables.subscriptionIndex, key: indexKey)
            }
            _ = try txn.delete(tables.subscriptions, key: key)
        }
        _ = try txn.delete(tables.subscriptionsFired, key: key)
        _ = try txn.delete(tables.subscriptionState, key: key)
    }

    // MARK: - Reading

    /// The subscription `id` of `database`, or `nil`.
    public func subscription(_ id: String, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Subscription? {
        try storedSubscription(FeedKeys.database(database), id, txn)
    }

    /// Every subscription of `database`, by ID (byte order).
    public func subscriptions(in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> [Subscription] {
        var definitions: [[UInt8]] = []
        try txn.scan(tables.subscriptions, prefix: FeedKeys.database(database)) { _, value in
            definitions.append(Array(value))
            return true
        }
        return try definitions.map { try subscriptionCache.subscription($0) }
    }

    /// The global sequence of the last commit that fired subscription `id`, if any.
    public func lastFired(_ id: String, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> UInt64? {
        try txn.withValue(tables.subscriptionState, key: ViewKeys.subscription(database, id)) { buffer in
            var reader = BinaryReader(buffer, context: "subscription state")
            return try reader.u64()
        }
    }

    /// `firesOnce` subscriptions that fired and still await their logged deletion.
    public func firedOnceSubscriptions(_ txn: LMDBReadTransaction) throws -> [(database: DatabaseID, subscriptionID: String)] {
        var result: [(DatabaseID, String)] = []
        try txn.scan(tables.subscriptionsFired, prefix: []) { _, value in
            var reader = BinaryReader(value, context: "fired subscription")
            _ = try reader.u64()
            result.append((try reader.databaseID(), try reader.string()))
            return true
        }
        return result
    }

    /// Whether `firesOnce` subscription `id` has fired and awaits deletion.
    public func hasFiredOnce(_ id: String, in database: DatabaseID, _ txn: LMDBReadTransaction) throws -> Bool {
        try txn.contains(tables.subscriptionsFired, key: ViewKeys.subscription(database, id))
    }

    /// The sequence of `user`'s latest notification (0: none yet).
    public func notificationHead(for user: String, _ txn: LMDBReadTransaction) throws -> UInt64 {
        try txn.withValue(tables.notificationHeads, key: SubscriptionIndex.userKey(user)) { buffer in
            var reader = BinaryReader(buffer, context: "notification head")
            return try reader.u64()
        } ?? 0
    }

    /// `user`'s notifications after sequence `after`, in order, at most `limit`.
    public func notifications(for user: String, after: UInt64, limit: Int, _ txn: LMDBReadTransaction) throws
        -> [SubscriptionNotification]
    {
        guard limit > 0, after < .max else { return [] }
        let userKey = SubscriptionIndex.userKey(user)
        var result: [SubscriptionNotification] = []
        try txn.scan(
            tables.notifications, from: SubscriptionIndex.notificationKey(userKey, after + 1),
            to: SubscriptionIndex.notificationKey(userKey, .max)
        ) { _, value in
            result.append(try NotificationCodec.decode(value))
            return result.count < limit
        }
        return result
    }
}
