import Crypto
import CumulusLog
import CumulusModel

/// Keys of the `subscriptionIndex` table, built so a record event finds the
/// subscriptions that could fire by a few prefix seeks instead of reading every
/// subscription of the database:
///
/// ```
/// database key ‖ 1 ‖ type hash ‖ subscription ID        query subscriptions (by the query's record type)
/// database key ‖ 2 ‖ zone key ‖ subscription ID         zone subscriptions, any type
/// database key ‖ 3 ‖ zone key ‖ type hash ‖ ID          zone subscriptions for one record type
/// database key ‖ 4 ‖ subscription ID                    database subscriptions, any type
/// database key ‖ 5 ‖ type hash ‖ subscription ID        database subscriptions for one record type
/// database key ‖ 6 ‖ type hash ‖ field hash ‖ value ‖ ID  query subscriptions with an equality filter
/// ```
///
/// A query subscription with an equality filter on a field (`bucket == 3`) is found
/// through the changed record's own value of that field (tag 6; the value in
/// ``OrderedEncoding``, once per kind it could equal), so 10,000 subscriptions on one
/// type that each watch another value cost a commit only the few that can match.
///
/// Type hashes are ``IndexKeys``' 8-byte SHA-256 prefix, as in the query indexes, so
/// no key exceeds 16 + 1 + 16 + 8 + 255 bytes.
public enum SubscriptionIndex {
    /// The kind byte of an index key.
    enum Tag: UInt8 {
        case query = 1
        case zone = 2
        case zoneOfType = 3
        case database = 4
        case databaseOfType = 5
        case queryByValue = 6
    }

    /// The index keys of `subscription` in `database` (several for an equality
    /// filter whose value could equal values of several kinds).
    static func keys(_ subscription: Subscription, in database: DatabaseID) -> [[UInt8]] {
        let databaseKey = FeedKeys.database(database)
        let id = Array(subscription.subscriptionID.utf8)
        if case .query(let query, _, _, _) = subscription.kind {
            for filter in query.filters where filter.comparator == .equals {
                guard case .field(let field) = filter.key else { continue }
                let encodings = equalityEncodings(filter.value)
                guard !encodings.isEmpty else { continue }
                let prefix = valuePrefix(databaseKey, recordType: query.recordType) + IndexKeys.hash8(field)
                return encodings.map { prefix + $0 + id }
            }
        }
        return [key(subscription, in: database)]
    }

    /// The prefix of the equality-indexed query subscriptions on `recordType`.
    static func valuePrefix(_ databaseKey: [UInt8], recordType: String) -> [UInt8] {
        databaseKey + [Tag.queryByValue.rawValue] + IndexKeys.hash8(recordType)
    }

    /// The ordered encodings a record's value would have if it equalled `value`
    /// (`QueryEvaluator.equal` compares numbers across kinds, and a reference with a
    /// bare record name).
    static func equalityEncodings(_ value: FieldValue) -> [[UInt8]] {
        var values: [FieldValue] = []
        switch value {
        case .string(let text):
            values = [value, .reference(Reference(recordID: RecordID(recordName: text)))]
        case .int64(let number):
            values = [value, .double(Double(number)), .timestamp(Timestamp(millisecondsSince1970: number))]
        case .double(let number):
            values = [value]
            if let exact = Int64(exactly: number) { values.append(.int64(exact)) }
        case .timestamp(let time):
            values = [value, .int64(time.millisecondsSince1970)]
        case .reference, .bytes:
            values = [value]
        case .location, .asset, .list:
            return []
        }
        return values.compactMap(OrderedEncoding.encoded)
    }

    /// The single index key of a subscription without an indexable equality filter.
    static func key(_ subscription: Subscription, in database: DatabaseID) -> [UInt8] {
        let databaseKey = FeedKeys.database(database)
        let id = Array(subscription.subscriptionID.utf8)
        switch subscription.kind {
        case .query(let query, _, _, _):
            return databaseKey + [Tag.query.rawValue] + IndexKeys.hash8(query.recordType) + id
        case .zone(let zoneID, let recordType):
            let zoneKey = FeedKeys.zone(database, zoneID)
            if let recordType {
                return databaseKey + [Tag.zoneOfType.rawValue] + zoneKey + IndexKeys.hash8(recordType) + id
            }
            return databaseKey + [Tag.zone.rawValue] + zoneKey + id
        case .database(let recordType):
            if let recordType { return databaseKey + [Tag.databaseOfType.rawValue] + IndexKeys.hash8(recordType) + id }
            return databaseKey + [Tag.database.rawValue] + id
        }
    }

    /// The prefix under which query subscriptions on `recordType` sit.
    static func queryPrefix(_ databaseKey: [UInt8], recordType: String) -> [UInt8] {
        databaseKey + [Tag.query.rawValue] + IndexKeys.hash8(recordType)
    }

    /// The prefixes of the zone and database subscriptions a change to `zoneKey`
    /// (of `recordType`, if it is a record change) could fire.
    static func touchPrefixes(_ databaseKey: [UInt8], zoneKey: [UInt8], recordType: String?) -> [[UInt8]] {
        // In tag order, so a commit's notifications come out in index order.
        guard let recordType else {
            return [databaseKey + [Tag.zone.rawValue] + zoneKey, databaseKey + [Tag.database.rawValue]]
        }
        let typeHash = IndexKeys.hash8(recordType)
        return [
            databaseKey + [Tag.zone.rawValue] + zoneKey,
            databaseKey + [Tag.zoneOfType.rawValue] + zoneKey + typeHash,
            databaseKey + [Tag.database.rawValue],
            databaseKey + [Tag.databaseOfType.rawValue] + typeHash,
        ]
    }

    /// `notifications`, `notificationHeads`: the 16-byte key of a user (SHA-256 of the
    /// record name, truncated), so a user's notifications are one prefix range.
    public static func userKey(_ user: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("U".utf8) + Array(user.utf8)).prefix(16))
    }

    /// `notifications`: user key ‖ u64 sequence (big-endian, so key order is stream order).
    public static func notificationKey(_ userKey: [UInt8], _ sequence: UInt64) -> [UInt8] {
        var writer = BinaryWriter(capacity: 24)
        writer.raw(userKey)
        writer.u64(sequence)
        return writer.bytes
    }
}
