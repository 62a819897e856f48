import CumulusModel
import CumulusTestSupport
import CumulusViews
import Testing

@Suite("A record's outgoing references (the reference graph's edges)")
struct OutgoingReferenceTests {
    /// Records whose references repeat: few target names and actions, plain and list
    /// fields, other zones, a parent; in all three forms a record takes.
    private func records(seed: UInt64, count: Int) throws -> [Record] {
        var random = RandomRecords(seed: seed)
        let home = ZoneID(zoneName: "Home", ownerName: "_owner")
        let away = ZoneID(zoneName: "Away", ownerName: "_owner")
        let names = ["a", "b", "B", "a1", "item-10", "item-9"]
        let actions: [Reference.Action] = [.none, .deleteSelf, .validate]
        func reference() -> Reference {
            Reference(
                recordID: RecordID(recordName: names[random.int(0...names.count - 1)], zoneID: random.chance(0.2) ? away : home),
                action: actions[random.int(0...actions.count - 1)])
        }
        var made: [Record] = []
        for index in 0..<count {
            var record = Record(recordType: "Item", recordID: RecordID(recordName: "r\(index)", zoneID: home))
            for field in 0..<random.int(0...4) {
                record["f\(field)"] = random.chance(0.5)
                    ? .reference(reference())
                    : .list((0..<random.int(1...4)).map { _ in .reference(reference()) })
            }
            record["title"] = .string("no reference here")
            if random.chance(0.3) { record.parent = Reference(recordID: reference().recordID) }
            let bytes = try RecordCodec.encode(record)
            var hints = RecordDecodeHints()
            made.append(record)
            made.append(try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) })
            made.append(try bytes.withUnsafeBytes { try RecordCodec.decodeForReading($0, hints: &hints) })
        }
        return made
    }

    @Test("3,000 records: edges are the set of same-zone references and the parent, in byte order then action")
    func edgesAreTheSortedSet() throws {
        var several = 0
        for record in try records(seed: 0xED6E_0014, count: 1_000) {
            var expected = Set<OutgoingReference>()
            for value in record.fields.values {
                for case .reference(let reference) in value.scalars where reference.recordID.zoneID == record.recordID.zoneID {
                    expected.insert(OutgoingReference(targetName: reference.recordID.recordName, action: reference.action))
                }
            }
            if let parent = record.parent, parent.recordID.zoneID == record.recordID.zoneID {
                expected.insert(OutgoingReference(targetName: parent.recordID.recordName, action: parent.action))
            }
            let ordered = expected.sorted { a, b in
                a.targetName != b.targetName
                    ? Array(a.targetName.utf8).lexicographicallyPrecedes(Array(b.targetName.utf8))
                    : a.action.rawValue < b.action.rawValue
            }
            #expect(OutgoingReference.of(record) == ordered, "\(record.recordID.recordName)")
            if ordered.count > 2 { several += 1 }
        }
        #expect(several > 300, "the generator should give many records with several edges")
    }

    @Test("3,000 records: fieldReferences lists every reference by field name order, list elements in order")
    func fieldReferencesInFieldOrder() throws {
        for record in try records(seed: 0xF1E1_0014, count: 1_000) {
            let expected = record.fields.keys.sorted().flatMap { key in
                (record.fields[key]?.scalars ?? []).compactMap { value -> (String, Reference)? in
                    if case .reference(let reference) = value { (key, reference) } else { nil }
                }
            }
            let listed = record.fieldReferences
            #expect(listed.map(\.field) == expected.map(\.0), "\(record.recordID.recordName)")
            #expect(listed.map(\.reference) == expected.map(\.1), "\(record.recordID.recordName)")
        }
    }
}
