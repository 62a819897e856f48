import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Subscription definitions")
struct SubscriptionCodecTests {
    static let zone = ZoneID(zoneName: "Lists", ownerName: "_alice")

    static let samples: [Subscription] = [
        Subscription(
            subscriptionID: "urgent-todos", owner: "_alice",
            kind: .query(
                Query(
                    recordType: "Todo",
                    filters: [
                        QueryFilter(key: .field("priority"), comparator: .greaterThan, value: .int64(3)),
                        QueryFilter(key: .field("title"), comparator: .beginsWith, value: .string("Buy")),
                    ]),
                zoneID: zone, firesOn: [.creation, .deletion], firesOnce: true)),
        Subscription(
            subscriptionID: "all", owner: "_bob",
            kind: .query(Query(recordType: "Note"), zoneID: nil, firesOn: .all, firesOnce: false)),
        Subscription(subscriptionID: "zone", owner: "_alice", kind: .zone(zone, recordType: nil)),
        Subscription(subscriptionID: "zone-typed", owner: "_alice", kind: .zone(zone, recordType: "Todo")),
        Subscription(subscriptionID: "db", owner: "_alice", kind: .database(recordType: nil)),
        Subscription(subscriptionID: "db-typed", owner: "_alice", kind: .database(recordType: "Todo")),
    ]

    @Test("every kind round-trips, and re-encodes to the same bytes")
    func roundTrip() throws {
        for subscription in Self.samples {
            let bytes = try SubscriptionCodec.encode(subscription)
            let decoded = try SubscriptionCodec.decode(bytes)
            #expect(decoded == subscription)
            #expect(try SubscriptionCodec.encode(decoded) == bytes)
        }
    }

    @Test("10,000 mutated and truncated definitions decode or fail with a CumulusError, never trap")
    func hostileBytes() throws {
        var random = SeededRandom(seed: 0x5AB5)
        let originals = try Self.samples.map { try SubscriptionCodec.encode($0) }
        var decoded = 0
        for index in 0..<10_000 {
            var bytes = originals[index % originals.count]
            switch index % 4 {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
            case 2:
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
            default:
                bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            do {
                let subscription = try SubscriptionCodec.decode(bytes)
                // Whatever decodes is canonical: it re-encodes to the same bytes.
                #expect(try SubscriptionCodec.encode(subscription) == bytes)
                decoded += 1
            } catch is CumulusError {
                continue
            }
        }
        #expect(decoded < 10_000)
    }

    @Test("unknown kinds, firesOn bits, flag bytes and trailing bytes are refused")
    func nonCanonical() throws {
        let bytes = try SubscriptionCodec.encode(Self.samples[1])
        #expect(throws: CumulusError.self) { try SubscriptionCodec.decode(bytes + [0]) }
        var badFiresOn = bytes
        badFiresOn[badFiresOn.count - 2] = 8
        #expect(throws: CumulusError.self) { try SubscriptionCodec.decode(badFiresOn) }
        var badFlag = bytes
        badFlag[badFlag.count - 1] = 2
        #expect(throws: CumulusError.self) { try SubscriptionCodec.decode(badFlag) }
        var badVersion = bytes
        badVersion[0] = 9
        #expect(throws: CumulusError.self) { try SubscriptionCodec.decode(badVersion) }
    }

    @Test("validation: IDs are 1–255 printable ASCII, types are identifiers, query subscriptions fire on something")
    func validation() throws {
        for subscription in Self.samples { try subscription.validate() }
        let bad: [Subscription] = [
            Subscription(subscriptionID: "", kind: .database(recordType: nil)),
            Subscription(subscriptionID: String(repeating: "a", count: 256), kind: .database(recordType: nil)),
            Subscription(subscriptionID: "tab\there", kind: .database(recordType: nil)),
            Subscription(subscriptionID: "ok", kind: .database(recordType: "9bad")),
            Subscription(subscriptionID: "ok", kind: .query(Query(recordType: "T"), zoneID: nil, firesOn: [], firesOnce: false)),
        ]
        for subscription in bad {
            #expect(throws: CumulusError.self) { try subscription.validate() }
        }
    }

    @Test("notifications round-trip, and damaged ones fail cleanly")
    func notifications() throws {
        let database = DatabaseID(container: "iCloud.x", environment: .development, scope: .private, owner: "_alice")
        let notification = SubscriptionNotification(
            sequence: 7, subscriptionID: "s", reason: .recordDeleted, database: database, zoneID: Self.zone,
            recordID: RecordID(recordName: "r", zoneID: Self.zone), commitSequence: 42, databaseSequence: 9)
        let bytes = NotificationCodec.encode(notification)
        #expect(try bytes.withUnsafeBytes { try NotificationCodec.decode($0) } == notification)
        var random = SeededRandom(seed: 11)
        for _ in 0..<2_000 {
            var damaged = bytes
            damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            damaged = Array(damaged.prefix(Int.random(in: 0...damaged.count, using: &random)))
            _ = try? damaged.withUnsafeBytes { try NotificationCodec.decode($0) }
        }
    }
}
