import Testing
@testable import CumulusModel

@Suite("Record validation")
struct RecordValidatorTests {
    let zone = ZoneID(zoneName: "Lists")

    func record(_ fields: [String: FieldValue] = [:], zone: ZoneID? = nil) -> Record {
        Record(recordType: "Item", recordID: RecordID(recordName: "item1", zoneID: zone ?? self.zone), fields: fields)
    }

    /// Checks that `bad` fails with `code`, naming the record and (if given) the field,
    /// both as a record checked and as a record about to be stored.
    func expectRejected(_ bad: Record, _ code: CumulusError.Code, field: String?, scope: DatabaseScope = .private) {
        for storing in [false, true] {
            do {
                if storing {
                    var copy = bad
                    try RecordValidator.validateForStorage(&copy, in: scope)
                } else {
                    try RecordValidator.validate(bad, in: scope)
                }
                Issue.record("expected \(code)")
            } catch let error as CumulusError {
                #expect(error.code == code, "\(error)")
                #expect(error.recordID == bad.recordID)
                if let field { #expect(error.field == field, "\(error)") }
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test("a record with every kind of value passes")
    func goodRecordPasses() throws {
        var good = record([
            "title": .string("Buy milk"), "count": .int64(2), "price": .double(1.5),
            "due": .timestamp(Timestamp(millisecondsSince1970: 0)), "blob": .bytes([1]),
            "list": .reference(Reference(recordID: RecordID(recordName: "list", zoneID: zone), action: .deleteSelf)),
            "where": .location(Location(latitude: 51.5, longitude: -0.12)),
            "file": .asset(Asset(fileChecksum: "abc", size: 3)),
            "tags": .list([.string("a"), .string("b")]), "none": .list([]),
        ])
        good.parent = Reference(recordID: RecordID(recordName: "list", zoneID: zone))
        good[encrypted: "secret"] = .bytes([9, 9])
        try RecordValidator.validate(good, in: .private)
    }

    @Test("record name, zone and type are checked")
    func identityIsChecked() {
        expectRejected(Record(recordType: "Item", recordID: RecordID(recordName: "_x", zoneID: zone)), .invalidArguments, field: nil)
        expectRejected(Record(recordType: "_Item", recordID: RecordID(recordName: "x", zoneID: zone)), .invalidArguments, field: nil)
        expectRejected(Record(recordType: "Item", recordID: RecordID(recordName: "x", zoneID: ZoneID(zoneName: "_z"))), .invalidArguments, field: nil)
    }

    @Test("the public database holds only the default zone")
    func publicDatabaseDefaultZoneOnly() throws {
        try RecordValidator.validate(record(zone: .default), in: .public)
        expectRejected(record(), .invalidArguments, field: nil, scope: .public)
    }

    @Test("field names follow the identifier rules")
    func fieldNamesChecked() {
        expectRejected(record(["bad name": .int64(1)]), .invalidArguments, field: "bad name")
        expectRejected(record(["modificationDate": .int64(1)]), .invalidArguments, field: "modificationDate")
    }

    @Test("of several bad fields, the first by name is reported, whatever the dictionary's order")
    func firstBadFieldByName() {
        // Fields are checked in hash order and again in name order only after a
        // failure; with many bad fields, some seed will put a later name first.
        var fields: [String: FieldValue] = ["ok": .int64(1)]
        for index in 0..<40 { fields["f\(index + 10) bad"] = .int64(Int64(index)) }
        for _ in 0..<5 { expectRejected(record(fields), .invalidArguments, field: "f10 bad") }
        fields["a_mixed"] = .list([.int64(1), .string("2")])
        expectRejected(record(fields), .invalidArguments, field: "a_mixed")
    }

    @Test("lists are homogeneous and flat")
    func listsHomogeneous() throws {
        try RecordValidator.validate(record(["l": .list([.int64(1), .int64(2)])]), in: .private)
        expectRejected(record(["l": .list([.int64(1), .string("2")])]), .invalidArguments, field: "l")
        expectRejected(record(["l": .list([.list([.int64(1)])])]), .invalidArguments, field: "l")
    }

    @Test("non-finite doubles are refused, in fields, lists and locations")
    func nonFiniteDoublesRefused() throws {
        try RecordValidator.validate(record(["d": .double(-1e308)]), in: .private)
        expectRejected(record(["d": .double(.nan)]), .invalidArguments, field: "d")
        expectRejected(record(["d": .list([.double(1), .double(.infinity)])]), .invalidArguments, field: "d")
        expectRejected(record(["p": .location(Location(latitude: 1, longitude: 1, speed: .nan))]), .invalidArguments, field: "p")
    }

    @Test("locations stay on the globe")
    func locationRanges() throws {
        try RecordValidator.validate(record(["p": .location(Location(latitude: -90, longitude: 180))]), in: .private)
        expectRejected(record(["p": .location(Location(latitude: 91, longitude: 0))]), .invalidArguments, field: "p")
    }

    @Test("a record encoding to more than 1 MiB is limitExceeded")
    func sizeLimit() throws {
        try RecordValidator.validate(record(["b": .bytes([UInt8](repeating: 1, count: 1_000_000))]), in: .private)
        let big = record(["b": .bytes([UInt8](repeating: 1, count: Limits.maxRecordSize))])
        expectRejected(big, .limitExceeded, field: nil)
        // The request-time check leaves the size to the planner, which measures the
        // record as it will be stored.
        try RecordValidator.checkRules(big, in: .private)
    }

    @Test("parent must use action none and stay in the zone")
    func parentRules() throws {
        var ok = record()
        ok.parent = Reference(recordID: RecordID(recordName: "p", zoneID: zone))
        try RecordValidator.validate(ok, in: .private)
        var owning = record()
        owning.parent = Reference(recordID: RecordID(recordName: "p", zoneID: zone), action: .deleteSelf)
        expectRejected(owning, .invalidArguments, field: "parent")
        var crossing = record()
        crossing.parent = Reference(recordID: RecordID(recordName: "p", zoneID: .default))
        expectRejected(crossing, .invalidArguments, field: "parent")
    }

    @Test("references must stay in the record's zone, lists included")
    func referencesStayInZone() throws {
        let local = FieldValue.reference(Reference(recordID: RecordID(recordName: "t", zoneID: zone)))
        let foreign = FieldValue.reference(Reference(recordID: RecordID(recordName: "t", zoneID: .default)))
        try RecordValidator.validate(record(["r": local]), in: .private)
        expectRejected(record(["r": foreign]), .invalidArguments, field: "r")
        expectRejected(record(["r": .list([local, foreign])]), .invalidArguments, field: "r")
    }

    @Test("encrypted values: no references or assets, not in public, not also a plain field")
    func encryptedValueRules() throws {
        var ok = record()
        ok[encrypted: "pin"] = .string("1234")
        try RecordValidator.validate(ok, in: .private)
        var reference = record()
        reference[encrypted: "r"] = .reference(Reference(recordID: RecordID(recordName: "t", zoneID: zone)))
        expectRejected(reference, .invalidArguments, field: "r")
        var asset = record()
        asset[encrypted: "a"] = .list([.asset(Asset(fileChecksum: "c", size: 1))])
        expectRejected(asset, .invalidArguments, field: "a")
        var publicOne = record(zone: .default)
        publicOne[encrypted: "pin"] = .string("1234")
        expectRejected(publicOne, .invalidArguments, field: "pin", scope: .public)
        var both = record(["pin": .int64(1)])
        both[encrypted: "pin"] = .string("1234")
        expectRejected(both, .invalidArguments, field: "pin")
    }

    @Test("error descriptions name the code, record and field")
    func errorDescription() {
        let error = CumulusError(.invalidArguments, "bad", recordID: RecordID(recordName: "r"), field: "f")
        #expect(error.description == "invalidArguments: bad [record r@_defaultZone:__defaultOwner__, field 'f']")
    }
}
