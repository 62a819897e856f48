import CumulusStorage

/// The LMDB tables holding the views. All are derived from the log and can be
/// cleared and rebuilt; `Docs/LOG-FORMAT.md` §9 gives their layout.
public struct ViewTables: Sendable {
    /// zone key ‖ record name → the record (RecordCodec).
    public let records: LMDBTable
    /// zone key ‖ target name → (dup) u8 action ‖ source name: who refers to a record.
    public let refsIn: LMDBTable
    /// zone key ‖ source name → varint n, n × (u8 action, string target): what a record refers to.
    public let refsOut: LMDBTable
    /// zone key ‖ type hash ‖ record name → empty: records by type.
    public let byType: LMDBTable
    /// database key ‖ zone key → u64 incarnation ‖ database ID ‖ zone ID ‖ varint capabilities.
    public let zones: LMDBTable
    /// database key ‖ subscription ID → the subscription's definition.
    public let subscriptions: LMDBTable
    /// Field values for queries (``IndexKeys``) → empty.
    public let fieldIndex: LMDBTable
    /// Full-text tokens for queries (``IndexKeys``) → empty.
    public let tokenIndex: LMDBTable
    /// zone key ‖ actor → u64 sequence ‖ the client change token data of that
    /// user's latest commit in the zone that carried one (echoed by zone changes).
    public let clientTokens: LMDBTable
    /// ``SubscriptionIndex`` keys (database key ‖ kind ‖ type hash / zone key ‖
    /// subscription ID) → empty: which subscriptions a record event could fire.
    public let subscriptionIndex: LMDBTable
    /// database key ‖ subscription ID → u64 commit sequence ‖ database ID ‖ subscription
    /// ID: `firesOnce` subscriptions that fired and await their logged deletion.
    public let subscriptionsFired: LMDBTable
    /// database key ‖ subscription ID → u64 sequence of the last commit that fired it.
    public let subscriptionState: LMDBTable
    /// user key ‖ u64 per-user sequence → the notification (``NotificationCodec``).
    public let notifications: LMDBTable
    /// user key → u64 the user's last notification sequence.
    public let notificationHeads: LMDBTable

    /// Opens (creating) the view tables of `environment`.
    public init(environment: LMDBEnvironment) throws {
        records = try environment.table("records")
        refsIn = try environment.table("refsIn", options: .dupSort)
        refsOut = try environment.table("refsOut")
        byType = try environment.table("byType")
        zones = try environment.table("zones")
        subscriptions = try environment.table("subscriptions")
        fieldIndex = try environment.table("fieldIndex")
        tokenIndex = try environment.table("tokenIndex")
        clientTokens = try environment.table("clientTokens")
        subscriptionIndex = try environment.table("subscriptionIndex")
        subscriptionsFired = try environment.table("subscriptionsFired")
        subscriptionState = try environment.table("subscriptionState")
        notifications = try environment.table("notifications")
        notificationHeads = try environment.table("notificationHeads")
    }

    /// Every view table with its name, in a fixed order (for rebuild and digests).
    public var all: [LMDBTable] {
        [
            records, refsIn, refsOut, byType, zones, subscriptions, fieldIndex, tokenIndex, clientTokens,
            subscriptionIndex, subscriptionsFired, subscriptionState, notifications, notificationHeads,
        ]
    }
}
