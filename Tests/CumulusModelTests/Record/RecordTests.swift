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
            // Taken out of the record as plain values, so a box shared by mistake
            // cannot change them along with the record.
            let before = Self.properties(base)
            // Each mutation, and the properties it may change (changed keys aside,
            // which every value mutation also touches).
            let mutations: [(String, Set<String>, (inout Record) -> Void)] = [
                ("type", ["type"], { $0.recordType = "Other" }),
                ("id", ["id"], { $0.recordID = RecordID(recordName: "t2", zoneID: zone) }),
                ("field", ["fields"], { $0["title"] = .string("b") }),
                ("removed field", ["fields"], { $0["rank"] = nil }),
                ("encrypted", ["encrypted"], { $0[encrypted: "secret"] = .bytes([2]) }),
                ("creation", ["creation"], { $0.creationDate = nil }),
                ("modification", ["modification"], { $0.modificationDate = Timestamp(millisecondsSince1970: 5) }),
                ("creator", ["creator"], { $0.creatorUserRecordID = RecordID(recordName: "_bob") }),
                ("modifier", ["modifier"], { $0.lastModifiedUserRecordID = RecordID(recordName: "_bob") }),
                ("tag", ["tag"], { $0.recordChangeTag = "u" }),
                ("parent", ["parent"], { $0.parent = Reference(recordID: RecordID(recordName: "p", zoneID: zone)) }),
                ("share", ["share"], { $0.share = Reference(recordID: RecordID(recordName: "s", zoneID: zone)) }),
                ("marked", [], { $0.markChanged("rank") }),
                ("stored", ["fields", "encrypted"], { $0.setStored(fields: [:], encryptedValues: [:]) }),
                ("retained", ["fields", "encrypted"], { $0.retainValues { $0 == "rank" } }),
            ]
            for (label, allowed, mutate) in mutations {
                var copy = base
                mutate(&copy)
                let after = Self.properties(copy)
                let moved = Set(before.keys.filter { before[$0] != after[$0] })
                #expect(!moved.isEmpty, "\(label): the copy changed")
                #expect(moved.subtracting(allowed.union(["changed"])).isEmpty, "\(label): only \(allowed) moved, not \(moved)")
                #expect(Self.properties(base) == before, "\(label): the original did not move")
            }
        }
    }

    /// Every property of `record` as text, values in key order: a snapshot that shares
    /// nothing with the record.
    static func properties(_ record: Record) -> [String: String] {
        func sorted(_ values: [String: FieldValue]) -> String {
            values.keys.sorted().map { "\($0)=\(String(describing: values[$0]))" }.joined(separator: ",")
        }
        return [
            "type": record.recordType, "id": "\(record.recordID)", "fields": sorted(record.fields),
            "encrypted": sorted(record.encryptedValues), "creation": "\(String(describing: record.creationDate))",
            "modification": "\(String(describing: record.modificationDate))",
            "creator": "\(String(describing: record.creatorUserRecordID))",
            "modifier": "\(String(describing: record.lastModifiedUserRecordID))",
            "tag": "\(String(describing: record.recordChangeTag))", "parent": "\(String(describing: record.parent))",
            "share": "\(String(describing: record.share))", "changed": record.changedKeys.sorted().joined(separator: ","),
        ]
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

    @Test("record IDs that differ only by zone or owner are different keys (the hash covers the name alone)")
    func recordIDsDifferingByZone() {
        let ids = [
            RecordID(recordName: "item", zoneID: ZoneID(zoneName: "A")),
            RecordID(recordName: "item", zoneID: ZoneID(zoneName: "B")),
            RecordID(recordName: "item", zoneID: ZoneID(zoneName: "A", ownerName: "_bob")),
            RecordID(recordName: "item2", zoneID: ZoneID(zoneName: "A")),
        ]
        var byID: [RecordID: Int] = [:]
        for (index, id) in ids.enumerated() { byID[id] = index }
        #expect(byID.count == 4)
        for (index, id) in ids.enumerated() { #expect(byID[id] == index) }
        #expect(Set(ids + ids).count == 4)
    }
}
