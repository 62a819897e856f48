import Foundation
import Testing
@testable import CumulusModel
@testable import CumulusServer
import CumulusTestSupport

/// The streaming writer against the tree the server built before (``ReferenceRecordJSON``,
/// serialized by `JSONEncoder` with sorted keys): the same bytes, record for record.
@Suite("Record JSON from stored bytes")
struct RecordJSONWriterTests {
    static func tree(_ record: Record, _ options: RecordJSONWriter.Options) throws -> [UInt8] {
        Array(try ReferenceRecordJSON.encode(
            record, desiredKeys: options.desiredKeys, numbersAsStrings: options.numbersAsStrings,
            downloadURL: options.downloadURL
        ).serialized())
    }

    static func written(_ stored: [UInt8], _ options: RecordJSONWriter.Options) throws(CumulusError) -> [UInt8] {
        var writer = JSONWriter()
        try stored.withUnsafeBytes { buffer in
            Result { () throws(CumulusError) in try RecordJSONWriter.write(stored: buffer, options, into: &writer) }
        }.get()
        return writer.bytes
    }

    /// Random records, some with what the generator leaves out: a key in both value
    /// spaces, strings that need escapes.
    static func records(seed: UInt64, count: Int) -> [Record] {
        var random = RandomRecords(seed: seed)
        return (0..<count).map { _ in
            var record = random.record()
            if random.chance(0.3), let key = record.fields.keys.sorted().first {
                record[encrypted: key] = .bytes((0..<random.int(0...40)).map { _ in UInt8(random.int(0...255)) })
            }
            if random.chance(0.3) { record["escaped"] = .string("quote \" slash \\ tab \t nl \n ctl \u{01} é 😀") }
            record.clearChangedKeys()
            return record
        }
    }

    static func options(_ index: Int, _ record: Record) -> RecordJSONWriter.Options {
        var options = RecordJSONWriter.Options()
        options.numbersAsStrings = index % 3 == 1
        if index % 4 == 2 {
            // Some kept, some not, and one no record holds.
            let keys = (Array(record.fields.keys) + Array(record.encryptedValues.keys)).sorted()
            options.desiredKeys = Set(keys.enumerated().filter { $0.offset % 2 == 0 }.map(\.element) + ["absent"])
        }
        if index % 5 == 3 {
            options.downloadURL = { asset in asset.size % 2 == 0 ? "https://example.test/a/\(asset.fileChecksum)" : nil }
        }
        return options
    }

    @Test("5,000 random records: the bytes written from storage are the bytes the tree gave, under every read option")
    func agreesWithTheTree() throws {
        for (index, record) in Self.records(seed: 0x5EED_0042, count: 5_000).enumerated() {
            let stored = try RecordCodec.encode(record)
            let options = Self.options(index, record)
            let expected = try Self.tree(RecordCodec.decode(stored), options)
            let written = try Self.written(stored, options)
            #expect(written == expected, "record \(index): \(String(decoding: written, as: UTF8.self))")
            // From an object (a modify's result) it is the same again.
            var fromRecord = JSONWriter()
            try RecordJSONWriter.write(record, options, into: &fromRecord)
            #expect(fromRecord.bytes == expected, "record \(index) written from its object")
            if written != expected { return }
        }
    }

    @Test("damaged stored bytes are internalError and leave the writer as it was; bytes that still decode are written as decoded")
    func damagedBytes() throws {
        var random = RandomRecords(seed: 0xDA3A6E)
        var refused = 0
        for (index, record) in Self.records(seed: 0xBAD5EED, count: 3_000).enumerated() {
            let damaged = random.damaged(try RecordCodec.encode(record), round: index)
            var writer = JSONWriter()
            writer.beginArray()
            writer.int(7)
            let before = writer.bytes
            let outcome = damaged.withUnsafeBytes { buffer in
                Result { () throws(CumulusError) in try RecordJSONWriter.write(stored: buffer, .init(), into: &writer) }
            }
            if let decoded = try? RecordCodec.decode(damaged) {
                // Still a valid record (a flipped byte inside a string, say): written as it reads.
                let expected = try Self.tree(decoded, .init())
                #expect(throws: Never.self, "record \(index) decodes, so it is written") { try outcome.get() }
                #expect(Array(writer.bytes.dropFirst(before.count + 1)) == expected, "record \(index)")
            } else {
                refused += 1
                #expect(throws: CumulusError.self, "record \(index) does not decode, so it is not written") { try outcome.get() }
                if case .failure(let error) = outcome { #expect(error.code == .internalError) }
                #expect(writer.bytes == before, "record \(index): nothing of it is left in the answer")
                writer.int(8)
                writer.endArray()
                #expect(String(decoding: writer.bytes, as: UTF8.self) == "[7,8]")
            }
        }
        #expect(refused > 1_000)
    }

    @Test("the tree the server still builds for a few answers is the writer's output, parsed: the same document")
    func treeIsTheWrittenRecord() throws {
        for (index, record) in Self.records(seed: 0x7EE, count: 500).enumerated() {
            let options = Self.options(index, record)
            let tree = try RecordJSON.encode(
                record, desiredKeys: options.desiredKeys, numbersAsStrings: options.numbersAsStrings,
                downloadURL: options.downloadURL)
            // The same document; a whole double (1.0e17) parses back as an integer, so
            // the two are compared as values, not bytes.
            #expect(tree == (try JSONValue.parse(Data(Self.tree(record, options)))), "record \(index)")
        }
    }

    @Test("a share record is recognised by its stored type alone")
    func shareType() throws {
        let share = Record(recordType: "cloudkit.share", recordID: RecordID(recordName: "s"))
        let plain = Record(recordType: "Item", recordID: RecordID(recordName: "i"))
        #expect(try RecordCodec.encode(share).withUnsafeBytes { RecordJSONWriter.isShare($0) })
        #expect(try !RecordCodec.encode(plain).withUnsafeBytes { RecordJSONWriter.isShare($0) })
        #expect(![UInt8]().withUnsafeBytes { RecordJSONWriter.isShare($0) })
    }
}
