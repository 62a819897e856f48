import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("Lazily decoded records (values kept in their stored bytes)")
struct LazyRecordTests {
    @Test("5,000 random records: a lazy record answers every read, equality, hash and encode as the full decode does")
    func agreesWithFullDecode() throws {
        var random = RandomRecords(seed: 0x1A2_0014)
        for index in 0..<5_000 {
            let bytes = try RecordCodec.encode(random.record())
            let eager = try RecordCodec.decode(bytes)
            let lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            #expect(lazy.encoded != nil, "record \(index) should keep its values encoded")
            try expectAgreement(of: lazy, with: eager, bytes: bytes, "record \(index)")
        }
    }

    @Test("2,000 random records: the references walked in the stored bytes are the record's field references")
    func referencesFromTheBytes() throws {
        var random = RandomRecords(seed: 0x2EF_0014)
        func key(_ reference: Reference) -> String {
            "\(reference.recordID.zoneID.zoneName)/\(reference.recordID.zoneID.ownerName)/\(reference.recordID.recordName)/\(reference.action)"
        }
        var withReferences = 0
        for index in 0..<2_000 {
            let bytes = try RecordCodec.encode(random.record())
            let eager = try RecordCodec.decode(bytes)
            let lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            let expected = eager.fieldReferences.map { key($0.reference) }.sorted()
            if !expected.isEmpty { withReferences += 1 }
            var fromEager: [String] = []
            eager.forEachFieldReference { fromEager.append(key($0)) }
            var fromBytes: [String] = []
            lazy.forEachFieldReference { fromBytes.append(key($0)) }
            #expect(fromEager.sorted() == expected && fromBytes.sorted() == expected, "record \(index)")
            #expect(lazy.encoded != nil, "record \(index): walking references decodes nothing for good")
        }
        #expect(withReferences > 200, "the generator should give many records with references")
    }

    @Test("2,000 random records: references and assets, with their fields, agree on every form and every ask")
    func referencesAndAssetsKept() throws {
        var random = RandomRecords(seed: 0xA55_E75)
        func references(_ record: Record) -> [String] {
            record.fieldReferences.map { "\($0.field)=\($0.reference.recordID.recordName)/\($0.reference.action)" }
        }
        func assets(_ record: Record) -> [String] {
            var found: [String] = []
            record.forEachFieldAsset { found.append("\($0.fileChecksum)/\($0.size)") }
            return found.sorted()
        }
        func walked(_ record: Record) -> [String] {
            var found: [String] = []
            record.forEachFieldReference { found.append($0.recordID.recordName) }
            return found.sorted()
        }
        var withBoth = 0
        for index in 0..<2_000 {
            var kept = random.record()
            let bytes = try RecordCodec.encodeKeepingValues(&kept)
            let eager = try RecordCodec.decode(bytes)
            let expected = (references(eager), assets(eager), walked(eager))
            if !expected.0.isEmpty && !expected.1.isEmpty { withBoth += 1 }
            // Each form, asked for references first and for assets first (the first
            // ask finds both), then asked again (kept).
            var hints = RecordDecodeHints()
            let forms: [(String, Record)] = [
                ("just encoded", kept),
                ("checked bytes", try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }),
                ("unchecked bytes", try bytes.withUnsafeBytes { try RecordCodec.decodeForReading($0, hints: &hints) }),
                ("decoded cache", try bytes.withUnsafeBytes { buffer in
                    let record = try RecordCodec.decodeLazily(buffer)
                    _ = record.fields
                    return record
                }),
            ]
            for (name, record) in forms {
                #expect(record.encoded != nil, "record \(index), \(name): values kept encoded")
                let copy = record
                #expect(references(record) == expected.0 && assets(record) == expected.1, "record \(index), \(name)")
                #expect(assets(copy) == expected.1 && walked(copy) == expected.2, "record \(index), \(name), asked again")
            }
            let other = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            #expect(assets(other) == expected.1 && references(other) == expected.0, "record \(index), assets asked first")
        }
        #expect(withBoth > 50, "the generator should give records holding references and assets")
    }

    @Test("damaged unchecked values: once a read finds them malformed, they hold no references and no assets, kept or not")
    func damagedValuesHoldNothing() throws {
        var random = RandomRecords(seed: 0xDA_3A6E)
        var damaged = 0
        for round in 0..<5_000 {
            let bytes = random.damaged(try RecordCodec.encode(random.record()), round: round)
            guard (try? RecordCodec.decode(bytes)) == nil else { continue }
            var hints = RecordDecodeHints()
            guard let record = try? bytes.withUnsafeBytes({ try RecordCodec.decodeForReading($0, hints: &hints) }) else {
                continue
            }
            // Asked before the damage is known: a walk answers what it found, and
            // what it found is kept...
            _ = record.fieldReferences
            record.forEachFieldAsset { _ in }
            guard record.storedValuesError() != nil else { continue }
            damaged += 1
            // ...until a read finds the values malformed: then none, as every read.
            for ask in 0..<2 {
                var assets = 0
                record.forEachFieldAsset { _ in assets += 1 }
                var references = 0
                record.forEachFieldReference { _ in references += 1 }
                #expect(record.fieldReferences.isEmpty && assets == 0 && references == 0, "round \(round), ask \(ask)")
            }
        }
        #expect(damaged > 100, "the damage should often fall in the values")
    }

    @Test("hints, right or wrong, never change what a record decodes to")
    func hintsNeverChangeTheResult() throws {
        var random = RandomRecords(seed: 0x41_0014)
        let records = (0..<3_000).map { _ in random.record() }
        var hints = RecordDecodeHints()
        for (index, record) in records.enumerated() {
            let bytes = try RecordCodec.encode(record)
            let eager = try RecordCodec.decode(bytes)
            // Right, a neighbour's, or none: the strings must come out the same.
            switch index % 3 {
            case 0: hints.recordID = eager.recordID
            case 1: hints.recordID = records[(index + 1) % records.count].recordID
            default: hints.recordID = nil
            }
            let lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0, hints: &hints) }
            #expect(lazy == eager, "record \(index)")
            #expect(Array(lazy.recordID.recordName.utf8) == Array(eager.recordID.recordName.utf8))
            #expect(lazy.creatorUserRecordID == eager.creatorUserRecordID)
            #expect(lazy.lastModifiedUserRecordID == eager.lastModifiedUserRecordID)
        }
    }

    @Test("two keys equal as Swift strings but different in bytes are refused as a full decode refuses them")
    func canonicallyEqualKeysAreRefused() throws {
        // Written by hand: the encoder, fed from a dictionary, can never write such a
        // pair. "K" (0x4B) sorts before U+212A KELVIN SIGN (E2 84 AA), and Swift calls
        // them equal; so are "é" precomposed and "e" + U+0301 decomposed.
        for (first, second) in [("K", "\u{212A}"), ("e\u{301}", "\u{E9}")] {
            var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Z")))
            record["a"] = .int64(1)
            var bytes = try RecordCodec.encode(record)
            // The record ends: fields count 1, key "a", value; encrypted count 0. Rewrite
            // the fields section with the two keys, in byte order.
            let sectionStart = bytes.count - 1 - 1 - 2 - 2
            var writer = BinaryWriter(capacity: 32)
            writer.length(2)
            let ordered = [first, second].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for key in ordered {
                writer.string(key)
                writer.u8(FieldValue.ValueType.int64.rawValue)
                writer.zigzag(1)
            }
            writer.length(0)
            #expect(bytes[sectionStart] == 1, "the fields count byte")
            bytes.replaceSubrange(sectionStart..., with: writer.bytes)
            let full = #expect(throws: CumulusError.self, "full decode, \(first) / \(second)") { try RecordCodec.decode(bytes) }
            let lazy = #expect(throws: CumulusError.self, "lazy decode, \(first) / \(second)") {
                try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            }
            #expect(full?.message.contains("appears twice") == true && lazy?.message.contains("appears twice") == true)
        }
    }

    @Test("a non-ASCII key is looked up as a dictionary would, on either form")
    func nonASCIILookupsMatchTheDictionary() throws {
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Z")))
        record["Key"] = .int64(1)
        record["caf\u{E9}"] = .int64(2)
        let lazy = try RecordCodec.encode(record).withUnsafeBytes { try RecordCodec.decodeLazily($0) }
        for key in ["\u{212A}ey", "cafe\u{301}", "Key", "caf\u{E9}", "nope"] {
            #expect(lazy[key] == record[key], "\(key)")
        }
    }

    @Test("2,000 random records: forEachField gives the same fields on either form, before and after the cache fills")
    func forEachFieldAgrees() throws {
        var random = RandomRecords(seed: 0xF0E_0014)
        for index in 0..<2_000 {
            let bytes = try RecordCodec.encode(random.record())
            let eager = try RecordCodec.decode(bytes)
            let lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            let accept = { (key: String) in key.utf8.count % 3 != index % 3 }
            func collect(_ record: Record) -> [String: FieldValue] {
                var seen: [String: FieldValue] = [:]
                record.forEachField(where: accept) { key, value in seen[key] = value }
                return seen
            }
            let expected = eager.fields.filter { accept($0.key) }
            #expect(collect(eager) == expected && collect(lazy) == expected, "record \(index), from the bytes")
            _ = lazy.fields
            #expect(collect(lazy) == expected, "record \(index), from the cache")
        }
    }

    @Test("a lazy record moved to another zone encodes as the decoded one does (references spelled out)")
    func movedRecordEncodesLikeADecodedOne() throws {
        let home = ZoneID(zoneName: "Home")
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n", zoneID: home))
        record["link"] = .reference(Reference(recordID: RecordID(recordName: "target", zoneID: home)))
        record["title"] = .string("hello")
        let bytes = try RecordCodec.encode(record)
        var eager = try RecordCodec.decode(bytes)
        var lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
        let away = RecordID(recordName: "n", zoneID: ZoneID(zoneName: "Away"))
        eager.recordID = away
        lazy.recordID = away
        let moved = try RecordCodec.encode(lazy)
        #expect(moved == (try RecordCodec.encode(eager)))
        // The reference still names its record in the old zone.
        #expect(try RecordCodec.decode(moved)["link"] == .reference(Reference(recordID: RecordID(recordName: "target", zoneID: home))))
    }

    @Test("desiredKeys on a lazy record keeps exactly the chosen values, as on a decoded one")
    func retainingValues() throws {
        var random = RandomRecords(seed: 0xD35_0014)
        for index in 0..<2_000 {
            let bytes = try RecordCodec.encode(random.record())
            var eager = try RecordCodec.decode(bytes)
            var lazy = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            let keep = { (key: String) in key.utf8.count % 2 == index % 2 }
            eager.retainValues(where: keep)
            lazy.retainValues(where: keep)
            #expect(lazy == eager, "record \(index)")
            #expect(lazy.allKeys.allSatisfy(keep))
            #expect(lazy.changedKeys.isEmpty, "record \(index): retaining marks nothing changed")
        }
    }

    @Test("setting a value on a lazy record changes that record only; copies keep what was read")
    func writesAreLocal() throws {
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n1", zoneID: ZoneID(zoneName: "Z")))
        record["title"] = .string("hello")
        record["count"] = .int64(3)
        record[encrypted: "secret"] = .bytes([1, 2, 3])
        let bytes = try RecordCodec.encode(record)
        let original = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
        var changed = original
        changed["title"] = .string("bye")
        changed["count"] = nil
        #expect(changed.encoded == nil)
        #expect(changed["title"] == .string("bye") && changed["count"] == nil)
        #expect(changed[encrypted: "secret"] == .bytes([1, 2, 3]))
        #expect(changed.changedKeys == ["title", "count"])
        #expect(original["title"] == .string("hello") && original["count"] == .int64(3))
        #expect(original.encoded != nil && original.changedKeys.isEmpty)
        #expect(original != changed)
    }

    @Test("truncated and mutated bytes: a lazy decode throws exactly when a full decode does, and then agrees")
    func hostileBytesAgreeWithFullDecode() throws {
        var random = RandomRecords(seed: 0xBAD_1A2)
        for round in 0..<20_000 {
            let bytes = random.damaged(try RecordCodec.encode(random.record()), round: round)
            let eager = try? RecordCodec.decode(bytes)
            let lazy = try? bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            #expect((eager == nil) == (lazy == nil), "round \(round): full decode \(eager == nil ? "throws" : "succeeds")")
            if let eager, let lazy {
                #expect(lazy == eager, "round \(round)")
                #expect(try RecordCodec.encode(lazy) == (try RecordCodec.encode(eager)), "round \(round): re-encode")
            }
        }
    }
}
