import CumulusModel
import CumulusTestSupport
import Testing

@testable import CumulusEngine

@Suite("Merging a save onto the stored record")
struct RecordMergerTests {
    /// The changed keys as their definition says: every key of either side, in either
    /// space, whose value differs, once, in UTF-8 byte order.
    static func reference(_ old: Record?, _ new: Record) -> [String] {
        var keys = Set<String>()
        for (before, after) in [(old?.fields ?? [:], new.fields), (old?.encryptedValues ?? [:], new.encryptedValues)] {
            for key in Set(before.keys).union(after.keys) where before[key] != after[key] { keys.insert(key) }
        }
        return keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    @Test("2,000 random pairs: the changed keys are the keys added, removed or changed, in either space, once, sorted")
    func changedKeysMatchTheirDefinition() {
        var random = SeededRandom(seed: 0xC4A_4E)
        let names = ["a", "b", "B", "title", "tags", "z9", "n", "Ab"]
        func values() -> [String: FieldValue] {
            var values: [String: FieldValue] = [:]
            for name in names where Int.random(in: 0..<3, using: &random) == 0 {
                values[name] = .int64(Int64(Int.random(in: 0..<3, using: &random)))
            }
            return values
        }
        func record() -> Record {
            var record = Record(recordType: "T", recordID: RecordID(recordName: "r"), fields: values())
            for (key, value) in values() { record[encrypted: key] = value }
            return record
        }
        for round in 0..<2_000 {
            let old = round % 5 == 0 ? nil : record()
            let new = (round % 7 == 0 ? old : nil) ?? record()
            #expect(RecordMerger.changedKeys(from: old, to: new) == Self.reference(old, new), "round \(round)")
        }
    }

    @Test("a non-ASCII key spelled two ways (one per space) is one key, as Swift strings compare")
    func canonicallyEqualKeysOnce() {
        var record = Record(recordType: "T", recordID: RecordID(recordName: "r"), fields: ["caf\u{E9}": .int64(1)])
        record[encrypted: "cafe\u{301}"] = .int64(2)
        #expect(RecordMerger.changedKeys(from: nil, to: record).count == 1)
        #expect(RecordMerger.changedKeys(from: nil, to: record) == Self.reference(nil, record))
    }
}
