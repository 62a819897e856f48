import CumulusModel

/// Realistic, CloudKit-like data for benchmarks, crash tests and log tests: a
/// to-do app's records of about 400 bytes, varied the way real ones are.
public enum SampleData {
    /// The database samples live in.
    public static let database = DatabaseID(container: "iCloud.com.example.todo", scope: .private, owner: "_3f1c0ad9b7e24c8d9a1e5b6c7d8e9f00")
    /// The custom zone samples live in.
    public static let zone = ZoneID(zoneName: "Lists", ownerName: "_3f1c0ad9b7e24c8d9a1e5b6c7d8e9f00")

    static let words = [
        "buy", "milk", "call", "mum", "fix", "the", "bike", "book", "flights", "to", "Lisbon", "review", "pull",
        "request", "water", "plants", "pay", "rent", "renew", "passport", "dentist", "appointment", "on", "Friday",
        "pick", "up", "parcel", "from", "post", "office", "write", "quarterly", "report", "clean", "garage",
    ]

    /// The `index`th to-do item: title, notes, due date, priority, tags, a
    /// `deleteSelf` reference to its list, and server-set system fields.
    public static func todoItem(_ index: Int, rng: inout SeededRandom) -> Record {
        func phrase(_ count: Int) -> String {
            (0..<count).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
        }
        let list = RecordID(recordName: "list-\(index % 50)", zoneID: zone)
        var record = Record(
            recordType: "TodoItem",
            recordID: RecordID(recordName: "item-\(index)-\(rng.next() % 1_000_000)", zoneID: zone))
        record["title"] = .string(phrase(3 + Int(rng.next() % 4)))
        record["notes"] = .string(phrase(12 + Int(rng.next() % 20)))
        record["dueDate"] = .timestamp(Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(rng.next() % 10_000_000_000)))
        record["priority"] = .int64(Int64(rng.next() % 4))
        record["done"] = .int64(Int64(rng.next() % 2))
        record["tags"] = .list((0..<Int(rng.next() % 4)).map { _ in .string(words[Int(rng.next() % UInt64(words.count))]) })
        record["list"] = .reference(Reference(recordID: list, action: .deleteSelf))
        record.creationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index) * 1000)
        record.modificationDate = record.creationDate
        record.creatorUserRecordID = RecordID(recordName: database.owner)
        record.lastModifiedUserRecordID = record.creatorUserRecordID
        record.recordChangeTag = String(rng.next() % 0xFFFF_FFFF, radix: 36)
        return record
    }

    /// A commit request saving the `index`th to-do item.
    public static func saveRequest(_ index: Int, rng: inout SeededRandom) -> CommitRequestParts {
        let record = todoItem(index, rng: &rng)
        return CommitRequestParts(
            actor: database.owner, requestID: "req-\(index)-\(rng.next() % 1_000_000)", record: record,
            changedKeys: record.changedKeys.sorted())
    }
}

/// The parts of a single-record save, so this module need not depend on the log.
public struct CommitRequestParts: Sendable {
    /// The acting user.
    public var actor: String
    /// The request ID.
    public var requestID: String
    /// The record saved.
    public var record: Record
    /// Its changed keys.
    public var changedKeys: [String]
}
