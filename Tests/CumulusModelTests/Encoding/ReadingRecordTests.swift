import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("Records read with their values unchecked until read (RecordCodec.decodeForReading)")
struct ReadingRecordTests {
    private func read(_ bytes: [UInt8]) throws -> Record {
        var hints = RecordDecodeHints()
        return try bytes.withUnsafeBytes { try RecordCodec.decodeForReading($0, hints: &hints) }
    }

    @Test("5,000 random records: every read, equality, hash and encode agree with the full decode, and nothing is damaged")
    func agreesWithFullDecode() throws {
        var random = RandomRecords(seed: 0x2EAD_0014)
        for index in 0..<5_000 {
            let bytes = try RecordCodec.encode(random.record())
            let eager = try RecordCodec.decode(bytes)
            let reading = try read(bytes)
            #expect(reading.encoded?.checked == false, "record \(index) should keep its values unchecked")
            // References walked in the bytes first, before the checks below fill the cache.
            var fromEager: [String] = []
            eager.forEachFieldReference { fromEager.append($0.recordID.recordName) }
            var fromBytes: [String] = []
            reading.forEachFieldReference { fromBytes.append($0.recordID.recordName) }
            #expect(fromBytes.sorted() == fromEager.sorted(), "record \(index): references")
            try expectAgreement(of: reading, with: eager, bytes: bytes, "record \(index)")
            #expect(reading.storedValuesFailure == nil, "record \(index): no damage met")
            #expect(reading.storedValuesError() == nil, "record \(index): no damage")
        }
    }

    @Test("desiredKeys on a record read unchecked keeps exactly the chosen values")
    func retainingValues() throws {
        var random = RandomRecords(seed: 0xD35_2EAD)
        for index in 0..<2_000 {
            let bytes = try RecordCodec.encode(random.record())
            var eager = try RecordCodec.decode(bytes)
            var reading = try read(bytes)
            let keep = { (key: String) in key.utf8.count % 2 == index % 2 }
            eager.retainValues(where: keep)
            reading.retainValues(where: keep)
            #expect(reading == eager, "record \(index)")
            #expect(reading.storedValuesError() == nil)
        }
    }

    @Test("non-ASCII keys, which only the full decode compares with each other, are answered from it")
    func nonASCIIKeysGoThroughTheFullDecode() throws {
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Z")))
        record["Key"] = .int64(1)
        record["caf\u{E9}"] = .int64(2)
        record["zzz"] = .reference(Reference(recordID: RecordID(recordName: "t", zoneID: ZoneID(zoneName: "Z"))))
        let bytes = try RecordCodec.encode(record)
        for key in ["\u{212A}ey", "cafe\u{301}", "Key", "caf\u{E9}", "zzz", "nope"] {
            #expect(try read(bytes)[key] == record[key], "\(key)")
        }
        var names: [String] = []
        try read(bytes).forEachFieldReference { names.append($0.recordID.recordName) }
        #expect(names == ["t"])
        #expect(try read(bytes).allKeys == record.allKeys)
    }

    @Test("20,000 damaged records: damage in the values is found exactly when a full decode refuses them, never traps, and never encodes")
    func damageIsFoundNotHidden() throws {
        var random = RandomRecords(seed: 0xBAD_2EAD)
        var damagedValues = 0
        for round in 0..<20_000 {
            let bytes = random.damaged(try RecordCodec.encode(random.record()), round: round)
            let eager = try? RecordCodec.decode(bytes)
            // The header is checked when read: where that throws, so does the full decode.
            guard let reading = try? read(bytes) else {
                #expect(eager == nil, "round \(round): the header read refused bytes a full decode takes")
                continue
            }
            // Partial reads on a fresh copy first: whatever they answer, no trap, and
            // damage they met is remembered.
            let partial = try read(bytes)
            _ = partial["a"]
            _ = partial[encrypted: "a"]
            partial.forEachFieldReference { _ in }
            if partial.storedValuesFailure != nil { #expect(eager == nil, "round \(round): damage met on good bytes") }

            let error = reading.storedValuesError()
            #expect((error == nil) == (eager != nil), "round \(round): full decode \(eager == nil ? "throws" : "succeeds")")
            if let eager {
                #expect(reading == eager, "round \(round)")
                #expect(try RecordCodec.encode(reading) == (try RecordCodec.encode(eager)), "round \(round): re-encode")
            } else {
                damagedValues += 1
                #expect(error?.code == .internalError, "round \(round): damage is the server's error, not the client's")
                #expect(reading.fields.isEmpty && reading.encryptedValues.isEmpty, "round \(round): no partial values")
                #expect(throws: CumulusError.self, "round \(round): damaged values are never encoded") {
                    try RecordCodec.encode(reading)
                }
                // A setter decodes the values for good; the damage goes with them.
                var changed = reading
                changed["fresh"] = .int64(1)
                #expect(changed.storedValuesError() != nil, "round \(round): setting a value hides nothing")
                #expect(throws: CumulusError.self, "round \(round): a changed damaged record is never encoded") {
                    try RecordCodec.encode(changed)
                }
            }
        }
        #expect(damagedValues > 1_000, "the damage should often land in the values")
    }

    @Test("a damaged record moved to another zone is refused too, not written with empty values")
    func movedDamagedRecordIsRefused() throws {
        let home = ZoneID(zoneName: "Home")
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: home))
        record["title"] = .string("hello")
        var bytes = try RecordCodec.encode(record)
        let at = try #require((0...(bytes.count - 5)).first { Array(bytes[$0..<$0 + 5]) == Array("hello".utf8) })
        bytes[at] = 0xFF
        for encoder in [{ (record: Record) throws -> [UInt8] in try RecordCodec.encode(record) }, { record in
            var copy = record
            return try RecordCodec.encodeKeepingValues(&copy)
        }] {
            var moved = try read(bytes)
            moved.recordID = RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Away"))
            #expect(throws: CumulusError.self) { try encoder(moved) }
        }
    }
}
