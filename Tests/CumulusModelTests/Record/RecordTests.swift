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

    @Test("a copy is a value: changing any property of one leaves the other as it was, in either form")
    func copiesAreIndependent() throws {
        let zone = ZoneID(zoneName: "Z", ownerName: "_alice")
        var original = Record(recordType: "Todo", recordID: RecordID(recordName: "t1", zoneID: zone), fields: [
            "title": .string("a"), "rank": .int64(1),
        ])
        original[encrypted: "secret"] = .bytes([1])
        original.creationDate = Timestamp(millisecondsSince1970: 1_000)
        original.recordChangeTag = "t"
        original.clearChangedKeys()
        // The same record with its values still in their stored bytes.
        let stored = try RecordCodec.encode(original)
        let lazy = try stored.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
        #expect(lazy == original)

        for base in [original, lazy] {
            let before = base
            let mutations: [(String, (inout Record) -> Void)] = [
                ("type", { $0.recordType = "Other" }),
                ("id", { $0.recordID = RecordID(recordName: "t2", zoneID: zone) }),
                ("field", { $0["title"] = .string("b") }),
                ("removed field", { $0["rank"] = nil }),
                ("encrypted", { $0[encrypted: "secret"] = .bytes([2]) }),
                ("creation", { $0.creationDate = nil }),
                ("modification", { $0.modificationDate = Timestamp(millisecondsSince1970: 5) }),
                ("creator", { $0.creatorUserRecordID = RecordID(recordName: "_bob") }),
                ("modifier", { $0.lastModifiedUserRecordID = RecordID(recordName: "_bob") }),
                ("tag", { $0.recordChangeTag = "u" }),
                ("parent", { $0.parent = Reference(recordID: RecordID(recordName: "p", zoneID: zone)) }),
                ("share", { $0.share = Reference(recordID: RecordID(recordName: "s", zoneID: zone)) }),
                ("marked", { $0.markChanged("rank") }),
                ("stored", { $0.setStored(fields: [:], encryptedValues: [:]) }),
                ("retained", { $0.retainValues { $0 == "rank" } }),
            ]
            for (label, mutate) in mutations {
                var copy = base
                mutate(&copy)
                #expect(copy != base, "\(label): the copy changed")
                #expect(base == before, "\(label): the original did not")
                #expect(base["title"] == .string("a") && base[encrypted: "secret"] == .bytes([1]), "\(label)")
            }
        }
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
