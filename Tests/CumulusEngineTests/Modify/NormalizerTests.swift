import CumulusModel
import Testing

@testable import CumulusEngine

@Suite("Placeholder owners resolved in saved records")
struct NormalizerTests {
    let owner = "_alice"
    var normalizer: Normalizer { Normalizer(database: DatabaseID(container: "iCloud.x", scope: .private, owner: owner)) }

    /// A record in `zone` whose every reference place (a field, a list, parent, share,
    /// an encrypted value) points into `target`, with one key marked changed.
    func record(in zone: ZoneID, pointingInto target: ZoneID) -> Record {
        var record = Record(recordType: "T", recordID: RecordID(recordName: "r", zoneID: zone))
        record["ref"] = .reference(Reference(recordID: RecordID(recordName: "a", zoneID: target), action: .deleteSelf))
        record["refs"] = .list([.reference(Reference(recordID: RecordID(recordName: "b", zoneID: target))), .int64(1)])
        record[encrypted: "hidden"] = .reference(Reference(recordID: RecordID(recordName: "c", zoneID: target)))
        record.parent = Reference(recordID: RecordID(recordName: "p", zoneID: target))
        record.share = Reference(recordID: RecordID(recordName: "s", zoneID: target))
        record.clearChangedKeys()
        record.markChanged("ref")
        return record
    }

    @Test("a placeholder in any reference place, or in the record's own zone, is the owner; changed keys are kept")
    func placeholdersAnywhereAreResolved() {
        let real = ZoneID(zoneName: "Z", ownerName: owner)
        let placeholder = ZoneID(zoneName: "Z")
        let expected = record(in: real, pointingInto: real)
        for (zone, target) in [(placeholder, real), (real, placeholder), (placeholder, placeholder)] {
            #expect(normalizer.record(record(in: zone, pointingInto: target)) == expected)
        }
        // One placeholder among resolved references is enough to be found.
        var mixed = expected
        mixed["late"] = .list([.int64(2), .reference(Reference(recordID: RecordID(recordName: "d", zoneID: placeholder)))])
        let resolved = normalizer.record(mixed)
        #expect(resolved["late"] == .list([.int64(2), .reference(Reference(recordID: RecordID(recordName: "d", zoneID: real)))]))
        #expect(resolved.changedKeys == mixed.changedKeys)
        var inParent = expected
        inParent.parent = Reference(recordID: RecordID(recordName: "p", zoneID: placeholder))
        #expect(normalizer.record(inParent).parent == expected.parent)
        var inShare = expected
        inShare.share = Reference(recordID: RecordID(recordName: "s", zoneID: placeholder))
        #expect(normalizer.record(inShare).share == expected.share)
        var secret = expected
        secret[encrypted: "late"] = .reference(Reference(recordID: RecordID(recordName: "e", zoneID: placeholder)))
        #expect(normalizer.record(secret)[encrypted: "late"]
            == .reference(Reference(recordID: RecordID(recordName: "e", zoneID: real))))
    }

    @Test("a record without placeholders comes back as it was; the public database keeps them")
    func nothingToResolve() {
        let real = ZoneID(zoneName: "Z", ownerName: owner)
        let plain = record(in: real, pointingInto: real)
        #expect(normalizer.record(plain) == plain)
        let publicNormalizer = Normalizer(database: DatabaseID(container: "iCloud.x", scope: .public))
        let placeholderRecord = record(in: ZoneID(zoneName: "Z"), pointingInto: ZoneID(zoneName: "Z"))
        #expect(publicNormalizer.record(placeholderRecord) == placeholderRecord)
    }
}
