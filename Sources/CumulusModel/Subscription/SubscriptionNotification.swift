/// One notification: a change that matched a subscription, addressed to
/// the subscription's owner. Named so it does not clash with Foundation's `Notification`.
///
/// Notifications are written in the transaction of the commit that caused them, so
/// one exists exactly when its commit does.
public struct SubscriptionNotification: Sendable, Hashable {
    /// Why it fired. Query reasons keep CloudKit's raw values (1–3).
    public enum Reason: UInt8, Sendable, Hashable {
        /// A record matching a query subscription was created.
        case recordCreated = 1
        /// A record matching a query subscription after the change was updated.
        case recordUpdated = 2
        /// A record that matched a query subscription was deleted.
        case recordDeleted = 3
        /// Something changed in a zone a zone subscription watches.
        case recordZone = 4
        /// Something changed in a database a database subscription watches.
        case database = 5
        /// Matching was cut short in this commit (the commit's matching budget was
        /// spent): records of the query's type changed that the subscription was not
        /// matched against, so its owner should fetch the changes. CloudKit calls
        /// such notifications pruned. Never sent for a record its owner may not read.
        case pruned = 6
    }

    /// Position in the owner's notification stream, from 1, without gaps.
    public var sequence: UInt64
    /// The subscription that fired.
    public var subscriptionID: String
    /// Why.
    public var reason: Reason
    /// The database that changed.
    public var database: DatabaseID
    /// The zone that changed (`nil` for a database notification).
    public var zoneID: ZoneID?
    /// The record (query notifications only).
    public var recordID: RecordID?
    /// The global sequence of the commit that caused it.
    public var commitSequence: UInt64
    /// That commit's position in the database's change feed: the database change
    /// token after the change points here.
    public var databaseSequence: UInt64

    /// A notification.
    public init(
        sequence: UInt64, subscriptionID: String, reason: Reason, database: DatabaseID, zoneID: ZoneID?,
        recordID: RecordID?, commitSequence: UInt64, databaseSequence: UInt64
    ) {
        self.sequence = sequence
        self.subscriptionID = subscriptionID
        self.reason = reason
        self.database = database
        self.zoneID = zoneID
        self.recordID = recordID
        self.commitSequence = commitSequence
        self.databaseSequence = databaseSequence
    }
}
