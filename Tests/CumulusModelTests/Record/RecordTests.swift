import Foundation
import Testing
@testable import CumulusModel

@Suite("Record")
struct RecordTests {
    @Test("setting or removing a field marks its key changed; clearing forgets")
    func changedKeysTrackSets() {
        var record = Record(recordType: "Todo", recordID: RecordID(recordName: "t1"), fields: ["title": .string("a")])
        #expect(record.changedKeys == ["title"])
        record.clearChangedKeys()
        record["done"] = .int64(1)
        record["title"] = nil
        record[encrypted: "secret"] = .bytes([1, 2])
        #expect(record.changedKeys == ["done", "title", "secret"])
        #expect(record["title"] == nil)
        #expect(record.allKeys == ["done", "secret"])
    }

    @Test("allTokens splits every string field, lists included, at white space and lower-cases")
    func allTokensCoversStringsAndLists() {
        let record = Record(
            recordType: "Doc", recordID: RecordID(recordName: "d"),
            fields: [
                "title": .string("Hello  World\tAGAIN"),
                "tags": .list([.string("Swift Server"), .string("LMDB")]),
                "count": .int64(3),
                "note": .string(""),
            ])
        #expect(record.allTokens() == ["hello", "world", "again", "swift", "server", "lmdb"])
    }

    @Test("a missing record name gets a fresh UUID string")
    func missingNameGetsUUID() {
        let a = RecordID()
        let b = RecordID()
        #expect(a != b)
        #expect(a.recordName.count == 36)
        #expect(a.zoneID == .default)
    }

    @Test("fieldReferences lists references in plain and list fields")
    func fieldReferencesIncludeLists() {
        let zone = ZoneID(zoneName: "Z")
        let owner = RecordID(recordName: "owner", zoneID: zone)
        let other = RecordID(recordName: "other", zoneID: zone)
        let record = Record(
            recordType: "Item", recordID: RecordID(recordName: "i", zoneID: zone),
            fields: [
                "list": .reference(Reference(recordID: owner, action: .deleteSelf)),
                "links": .list([.reference(Reference(recordID: other)), .reference(Reference(recordID: owner))]),
            ])
        let refs = record.fieldReferences
        #expect(refs.count == 3)
        #expect(refs.filter { $0.field == "links" }.count == 2)
        #expect(refs.contains { $0.field == "list" && $0.reference.action == .deleteSelf })
    }

    @Test("timestamps keep millisecond precision")
    func timestampPrecision() {
        let t = Timestamp(millisecondsSince1970: 1_422_312_944_104)
        #expect(Timestamp(t.date) == t)
        for ms: Int64 in [-1, -1_000_001, 0, 1, 999, 253_402_300_799_999, -62_135_596_800_000] {
            let time = Timestamp(millisecondsSince1970: ms)
            #expect(Timestamp(time.date) == time)
        }
        #expect(Timestamp(Date(timeIntervalSince1970: 1.0015)).millisecondsSince1970 == 1001)
        #expect(Timestamp(Date(timeIntervalSince1970: -1.0015)).millisecondsSince1970 == -1002)
    }
}
