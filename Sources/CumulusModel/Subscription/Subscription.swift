/// A subscription: a standing question about a database whose answers are
/// notifications, one per matching change, in log order (`Docs/DATA-MODEL.md`,
/// "Subscriptions and notifications").
public struct Subscription: Sendable, Hashable {
    /// What a subscription watches.
    public enum Kind: Sendable, Hashable {
        /// Records of `query.recordType` passing `query`'s filters, in one zone or
        /// (`zoneID == nil`) every zone; `firesOnce`: deleted after the first notification.
        case query(Query, zoneID: ZoneID?, firesOn: FiresOn, firesOnce: Bool)
        /// Any change to records in a zone (optionally of one record type).
        case zone(ZoneID, recordType: String?)
        /// Any change in any zone of the database (optionally to one record type).
        case database(recordType: String?)
    }

    /// Most subscriptions one user holds in one database. CloudKit publishes no number;
    /// every save of a watched type is matched against each query subscription in the
    /// single writer, so one user's count is bounded (issue 40, `Docs/SECURITY.md`).
    public static let maxPerUser = 100

    /// The ID the client chose: 1–255 printable ASCII characters, unique per database.
    public var subscriptionID: String
    /// The user who saved it; notifications go to this user. Set by the engine.
    public var owner: String
    /// What it watches.
    public var kind: Kind

    /// A subscription; `owner` is replaced by the saving user when saved.
    public init(subscriptionID: String, owner: String = "", kind: Kind) {
        self.subscriptionID = subscriptionID
        self.owner = owner
        self.kind = kind
    }

    /// The record type the subscription is limited to, if any.
    public var recordType: String? {
        switch kind {
        case .query(let query, _, _, _): query.recordType
        case .zone(_, let recordType), .database(let recordType): recordType
        }
    }

    /// Throws `invalidArguments` unless the subscription is well formed on its own
    /// (the engine checks what depends on the database: scope rules, zones).
    public func validate() throws {
        try NameRules.checkASCII(subscriptionID, what: "subscription ID")
        if let recordType { try NameRules.checkRecordType(recordType) }
        switch kind {
        case .query(let query, let zoneID, let firesOn, _):
            if let zoneID { try NameRules.checkZoneID(zoneID) }
            guard !firesOn.isEmpty, FiresOn.all.isSuperset(of: firesOn) else {
                throw CumulusError(
                    .invalidArguments, "a query subscription must fire on creation, update or deletion (some of them)")
            }
            for filter in query.filters where filter.comparator == .near {
                guard let distance = filter.distance, distance.isFinite, distance >= 0 else {
                    throw CumulusError(.invalidArguments, "NEAR needs a finite, non-negative distance in metres")
                }
            }
        case .zone(let zoneID, _):
            try NameRules.checkZoneID(zoneID)
        case .database:
            break
        }
    }
}
