import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("Record reader (in place, partial)")
struct RecordReaderTests {
    @Test("5,000 random records: the header, any subset of fields, and a patched change tag equal what a full decode gives")
    func agreesWithFullDecode() throws {
        var random = RandomRecords(seed: 0x5EED_0014)
        for index in 0..<5_000 {
            let record = random.record()
            let bytes = try RecordCodec.encode(record)
            let keys = Array(record.fields.keys)
            let kept = Set(keys.filter { _ in random.int(0...1) == 0 })
            let keptEncrypted = index % 2 == 0 ? [] : Set(record.encryptedValues.keys.filter { _ in random.int(0...1) == 0 })
            let tag = "t\(index)"
            let (header, partial, patched) = try bytes.withUnsafeBytes { buffer in
                let reader = try RecordReader(buffer)
                return (
                    (reader.recordType, reader.recordID),
                    index % 2 == 0
                        ? try reader.record(keepingFields: { kept.contains($0) })
                        : try reader.record(keepingFields: { kept.contains($0) }, keepingEncrypted: { keptEncrypted.contains($0) }),
                    reader.replacingChangeTag(with: tag))
            }
            #expect(header.0 == record.recordType && header.1 == record.recordID, "record \(index): header")
            #expect(try bytes.withUnsafeBytes { try RecordReader.recordType(of: $0) } == record.recordType, "record \(index): type alone")

            var expected = record
            expected.setStored(
                fields: record.fields.filter { kept.contains($0.key) },
                encryptedValues: record.encryptedValues.filter { keptEncrypted.contains($0.key) })
            expected.clearChangedKeys()
            #expect(partial == expected, "record \(index): fields \(kept.sorted())")

            var bumped = record
            bumped.recordChangeTag = tag
            #expect(patched == (try RecordCodec.encode(bumped)), "record \(index): patched tag")
            if partial != expected { return }
        }
    }

    @Test("a record without a change tag gets one by patching, byte for byte as an encode would write it")
    func patchAddsAMissingTag() throws {
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n1", zoneID: ZoneID(zoneName: "Z")))
        record["title"] = .string("hello")
        record.parent = Reference(recordID: RecordID(recordName: "p", zoneID: ZoneID(zoneName: "Z")))
        #expect(record.recordChangeTag == nil)
        let patched = try RecordCodec.encode(record).withUnsafeBytes { try RecordReader($0).replacingChangeTag(with: "7") }
        record.recordChangeTag = "7"
        #expect(patched == (try RecordCodec.encode(record)))
        #expect(try RecordCodec.decode(patched).recordChangeTag == "7")
    }

    @Test("truncated and mutated bytes give an error from the reader, never a trap")
    func hostileBytesFailCleanly() throws {
        var random = RandomRecords(seed: 0xBAD_0014)
        var failures = 0
        for round in 0..<20_000 {
            let bytes = random.damaged(try RecordCodec.encode(random.record()), round: round)
            do {
                _ = try bytes.withUnsafeBytes { try RecordReader($0).record(keepingFields: { $0.count % 2 == 0 }) }
            } catch is CumulusError {
                failures += 1
            }
            // The type alone reads as far as the type: an error or a string, never a trap.
            do {
                _ = try bytes.withUnsafeBytes { try RecordReader.recordType(of: $0) }
            } catch is CumulusError {}
        }
        // Another format version, or bytes cut inside the type, are refused.
        var other = try RecordCodec.encode(random.record())
        other[0] = RecordCodec.formatVersion &+ 1
        #expect(throws: CumulusError.self) { try other.withUnsafeBytes { try RecordReader.recordType(of: $0) } }
        let note = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Z")))
        let cut = Array(try RecordCodec.encode(note).prefix(4))  // version, length 4, "No"
        #expect(throws: CumulusError.self) { try cut.withUnsafeBytes { try RecordReader.recordType(of: $0) } }
        // Every truncation before the end fails (the field count promises more).
        #expect(failures >= 10_000)
    }
}
