import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("Record encoding")
struct RecordCodecTests {
    @Test("10,000 random records round-trip, and re-encoding gives the same bytes")
    func randomRecordsRoundTrip() throws {
        var random = RandomRecords(seed: 0xC0FFEE)
        for index in 0..<10_000 {
            let record = random.record()
            try RecordValidator.validate(record, in: .private)
            let bytes = try RecordCodec.encode(record)
            let decoded = try RecordCodec.decode(bytes)
            #expect(decoded == record, "record \(index) changed in a round trip")
            let again = try RecordCodec.encode(decoded)
            #expect(again == bytes, "record \(index) re-encoded to different bytes")
            if decoded != record || again != bytes { return }
        }
    }

    @Test("a record encoded keeping its values: same bytes, same record, and encoding it again copies them; a later edit is encoded afresh")
    func encodeKeepingValues() throws {
        var random = RandomRecords(seed: 0xE1C0DE)
        for index in 0..<3_000 {
            let original = random.record()
            var kept = original
            let bytes = try RecordCodec.encodeKeepingValues(&kept)
            #expect(bytes == (try RecordCodec.encode(original)), "record \(index): first encode")
            #expect(kept.encoded != nil, "record \(index) keeps its values' bytes")
            #expect(kept == original && kept.fields == original.fields && kept.encryptedValues == original.encryptedValues)
            #expect(kept.changedKeys == original.changedKeys)
            #expect(try RecordCodec.encode(kept) == bytes, "record \(index): encoded again from the kept bytes")
            #expect(try RecordCodec.decode(bytes) == kept)
            // System fields are not in the kept bytes: a new tag is written as set.
            var retagged = kept
            retagged.recordChangeTag = "t\(index)"
            var expected = original
            expected.recordChangeTag = "t\(index)"
            #expect(try RecordCodec.encode(retagged) == RecordCodec.encode(expected))
            // Setting a value drops the kept bytes.
            var edited = kept
            edited["added"] = .int64(Int64(index))
            var editedOriginal = original
            editedOriginal["added"] = .int64(Int64(index))
            #expect(edited.encoded == nil)
            #expect(try RecordCodec.encode(edited) == RecordCodec.encode(editedOriginal), "record \(index): after an edit")
        }
    }

    @Test("a record measured for storage keeps its whole encoding until any change, alone or inside other bytes")
    func wholeEncodingKeptUntilChanged() throws {
        var random = RandomRecords(seed: 0x3407_E5C)
        let other = ZoneID(zoneName: "elsewhere", ownerName: "someone")
        let changes: [(String, (inout Record) -> Void)] = [
            ("type", { $0.recordType = "Changed" }),
            ("name", { $0.recordID.recordName += "-2" }),
            ("zone", { $0.recordID = RecordID(recordName: $0.recordID.recordName, zoneID: other) }),
            ("created", { $0.creationDate = Timestamp(millisecondsSince1970: 1) }),
            ("modified", { $0.modificationDate = Timestamp(millisecondsSince1970: 2) }),
            ("creator", { $0.creatorUserRecordID = RecordID(recordName: "_someoneElse") }),
            ("modifier", { $0.lastModifiedUserRecordID = nil }),
            ("tag", { $0.recordChangeTag = "changed" }),
            ("parent", { $0.parent = Reference(recordID: RecordID(recordName: "p", zoneID: $0.recordID.zoneID), action: .none) }),
            ("share", { $0.share = nil }),
            ("value", { $0["added"] = .string("x") }),
            ("encrypted", { $0[encrypted: "secret"] = .bytes([1, 2]) }),
        ]
        for index in 0..<500 {
            let original = random.record()
            var kept = original
            let bytes = try RecordCodec.encodeKeepingValues(&kept)
            #expect(kept.wholeEncoding == bytes, "record \(index): kept")
            var inside = BinaryWriter(capacity: 8)
            inside.u8(7)
            try RecordCodec.encode(kept, into: &inside)
            #expect(inside.bytes == [7] + bytes, "record \(index): inside other bytes")
            // Untouched copies share it; clearing no changed keys is no change.
            var copy = kept
            copy.clearChangedKeys()
            #expect(try RecordCodec.encode(copy) == bytes)
            // The same change made to a record never measured: encoded afresh.
            func fresh(_ change: (inout Record) -> Void) -> Record {
                var fresh = original
                change(&fresh)
                return fresh
            }
            for (name, change) in changes {
                // Changed in place (its own box) and changed as a copy (a shared one).
                var changed = original
                _ = try RecordCodec.encodeKeepingValues(&changed)
                change(&changed)
                var changedCopy = kept
                change(&changedCopy)
                #expect(changedCopy.wholeEncoding == nil, "record \(index): \(name) drops a copy's")
                #expect(try RecordCodec.encode(changedCopy) == RecordCodec.encode(fresh(change)), "record \(index): copy after \(name)")
                #expect(changed.wholeEncoding == nil, "record \(index): \(name) drops it")
                #expect(try RecordCodec.encode(changed) == RecordCodec.encode(fresh(change)), "record \(index): after \(name)")
                #expect(try RecordCodec.encodeKeepingValues(&changed) == RecordCodec.encode(fresh(change)), "record \(index): \(name), kept again")
                #expect(kept.wholeEncoding == bytes, "record \(index): \(name) left the original's")
            }
        }
    }

    @Test("field order does not change the bytes")
    func encodingIsIndependentOfInsertionOrder() throws {
        var a = Record(recordType: "Note", recordID: RecordID(recordName: "n1"))
        a["b"] = .int64(2)
        a["a"] = .string("x")
        a["c"] = .list([.double(1), .double(2)])
        var b = Record(recordType: "Note", recordID: RecordID(recordName: "n1"))
        b["c"] = .list([.double(1), .double(2)])
        b["a"] = .string("x")
        b["b"] = .int64(2)
        #expect(try RecordCodec.encode(a) == RecordCodec.encode(b))
    }

    @Test("negative zero is written as zero, so equal records encode equal")
    func negativeZeroIsCanonical() throws {
        let positive = Record(recordType: "T", recordID: RecordID(recordName: "r"), fields: ["d": .double(0)])
        let negative = Record(recordType: "T", recordID: RecordID(recordName: "r"), fields: ["d": .double(-0.0)])
        #expect(try RecordCodec.encode(positive) == RecordCodec.encode(negative))
    }

    @Test("the first byte is the format version")
    func formatByteLeads() throws {
        let bytes = try RecordCodec.encode(Record(recordType: "T", recordID: RecordID(recordName: "r")))
        #expect(bytes.first == RecordCodec.formatVersion)
        var future = bytes
        future[0] = 9
        #expect(throws: CumulusError.self) { try RecordCodec.decode(future) }
    }

    @Test("values without a canonical form are refused by the encoder")
    func encoderRefusesNonCanonicalValues() {
        let id = RecordID(recordName: "r")
        for value: FieldValue in [
            .double(.nan), .double(.infinity), .list([.int64(1), .string("x")]), .list([.list([])]),
            .location(Location(latitude: .nan, longitude: 0)),
        ] {
            #expect(throws: CumulusError.self) {
                try RecordCodec.encode(Record(recordType: "T", recordID: id, fields: ["f": value]))
            }
        }
    }

    @Test("non-canonical bytes are refused: unsorted keys, over-long varints, negative zero, trailing bytes")
    func decoderRefusesNonCanonicalBytes() throws {
        let record = Record(
            recordType: "T", recordID: RecordID(recordName: "r"), fields: ["a": .int64(1), "b": .double(2)])
        let bytes = try RecordCodec.encode(record)
        // Swap the two fields: keys out of order.
        var writer = BinaryWriter()
        writer.u8(1); writer.string("T"); writer.string("r")
        writer.string(ZoneID.defaultZoneName); writer.string(ZoneID.defaultOwnerName)
        writer.u8(0); writer.length(2)
        writer.string("b"); writer.u8(3); writer.double(2)
        writer.string("a"); writer.u8(2); writer.zigzag(1)
        writer.length(0)
        #expect(throws: CumulusError.self) { try RecordCodec.decode(writer.bytes) }
        // Trailing garbage.
        #expect(throws: CumulusError.self) { try RecordCodec.decode(bytes + [0]) }
        // Over-long varint for the int64 value 1 (0x02 as 0x82 0x00).
        var longVarint = BinaryWriter()
        longVarint.u8(1); longVarint.string("T"); longVarint.string("r")
        longVarint.string(ZoneID.defaultZoneName); longVarint.string(ZoneID.defaultOwnerName)
        longVarint.u8(0); longVarint.length(1)
        longVarint.string("a"); longVarint.u8(2); longVarint.u8(0x82); longVarint.u8(0x00)
        longVarint.length(0)
        #expect(throws: CumulusError.self) { try RecordCodec.decode(longVarint.bytes) }
        // Negative zero bits.
        var negativeZero = BinaryWriter()
        negativeZero.u8(1); negativeZero.string("T"); negativeZero.string("r")
        negativeZero.string(ZoneID.defaultZoneName); negativeZero.string(ZoneID.defaultOwnerName)
        negativeZero.u8(0); negativeZero.length(1)
        negativeZero.string("d"); negativeZero.u8(3); negativeZero.u64(0x8000_0000_0000_0000)
        negativeZero.length(0)
        #expect(throws: CumulusError.self) { try RecordCodec.decode(negativeZero.bytes) }
    }

    @Test("100,000 random, truncated and mutated byte strings decode or fail cleanly")
    func decoderSurvivesHostileBytes() throws {
        var random = RandomRecords(seed: 0xBAD5EED)
        var valid: [[UInt8]] = []
        for _ in 0..<200 { valid.append(try RecordCodec.encode(random.record())) }
        var decodedCount = 0
        var failedCount = 0
        for round in 0..<100_000 {
            var bytes: [UInt8]
            let base = valid[round % valid.count]
            switch round % 4 {
            case 0:  // pure noise, half of it behind a valid format byte
                bytes = (0..<random.int(0...64)).map { _ in UInt8.random(in: 0...255, using: &random.rng) }
                if round % 8 == 0, !bytes.isEmpty { bytes[0] = RecordCodec.formatVersion }
            case 1:  // truncated
                bytes = Array(base.prefix(random.int(0...max(base.count - 1, 0))))
            case 2:  // bytes flipped
                bytes = base
                for _ in 0..<random.int(1...4) where !bytes.isEmpty {
                    bytes[random.int(0...bytes.count - 1)] ^= UInt8.random(in: 1...255, using: &random.rng)
                }
            default:  // bytes inserted
                bytes = base
                bytes.insert(UInt8.random(in: 0...255, using: &random.rng), at: random.int(0...bytes.count))
            }
            do {
                let record = try RecordCodec.decode(bytes)
                decodedCount += 1
                // Whatever decodes must be canonical: it re-encodes to the same bytes.
                #expect(try RecordCodec.encode(record) == bytes)
            } catch is CumulusError {
                failedCount += 1
            }
        }
        #expect(decodedCount + failedCount == 100_000)
        #expect(failedCount > 50_000)
    }
}
