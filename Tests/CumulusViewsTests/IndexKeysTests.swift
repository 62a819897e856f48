import CumulusModel
import CumulusTestSupport
import Testing
@testable import CumulusViews

@Suite("Index keys")
struct IndexKeysTests {
    /// Token keys as they were first built: one per unique token `String`, then sorted.
    /// Keys written by older builds must be the keys built now, or a rebuild would
    /// leave entries nothing deletes. After the token comes the creation time (views
    /// format 3): milliseconds, sign bit flipped, big-endian.
    static func referenceTokenEntries(of record: Record, zoneKey: [UInt8]) -> [[UInt8]] {
        let prefix = IndexKeys.tokenPrefix(zoneKey, type: record.recordType)
        let created = UInt64(bitPattern: record.creationDate?.millisecondsSince1970 ?? 0) ^ (1 << 63)
        let name = (0..<8).map { UInt8(truncatingIfNeeded: created >> (56 - 8 * $0)) } + Array(record.recordID.recordName.utf8)
        return IndexKeys.sortedUnique(
            Tokenizer.tokens(of: record).map { token in
                var key = prefix
                OrderedEncoding.appendEscaped(token.utf8, to: &key)
                return key + name
            })
    }

    @Test("token keys of 3,000 random records, some with long words of NUL bytes and cut characters, equal the keys built from the token set")
    func tokenEntriesAgree() {
        var random = RandomRecords(seed: 0x1DE5_0014)
        let schema = EffectiveSchema(.empty, environment: .development)
        let zoneKey = [UInt8](repeating: 7, count: 16)
        let long = [
            String(repeating: "\u{0}x", count: 150), String(repeating: "\u{0}", count: 129) + "a",
            String(repeating: "\u{0}", count: 129) + "b", String(repeating: "é", count: 70) + "z",
            String(repeating: "ab", count: 70) + " " + String(repeating: "ab", count: 71),
        ]
        for index in 0..<3_000 {
            var record = random.record()
            if index % 3 == 0 { record["longWords"] = .string(long.filter { _ in random.chance(0.6) }.joined(separator: " ")) }
            #expect(
                IndexKeys.tokenEntries(of: record, zoneKey: zoneKey, schema: schema)
                    == Self.referenceTokenEntries(of: record, zoneKey: zoneKey),
                "record \(index)")
        }
    }

    /// Field keys as they were first built: each index value a separate array, joined
    /// to prefix and name afterwards, from the fully decoded fields (the exact form
    /// spelled out here, not taken from the code under test).
    static func referenceFieldEntries(of record: Record, zoneKey: [UInt8], schema: EffectiveSchema) -> [[UInt8]] {
        let type = record.recordType
        let name = Array(record.recordID.recordName.utf8)
        var entries: [[UInt8]] = []
        func add(_ field: String, _ value: FieldValue, _ options: IndexOptions) {
            guard !options.isDisjoint(with: [.queryable, .sortable]) else { return }
            let prefix = IndexKeys.fieldPrefix(zoneKey, type: type, field: field)
            for element in value.scalars {
                guard let ordered = OrderedEncoding.encoded(element) else { continue }
                entries.append(prefix + ordered + name)
                // A QUERYABLE string also has its exact bytes, for BEGINSWITH.
                if options.contains(.queryable), case .string(let text) = element {
                    var exact: [UInt8] = [OrderedEncoding.Kind.exactString.rawValue]
                    OrderedEncoding.appendEscaped(text.utf8, to: &exact)
                    entries.append(prefix + exact + name)
                }
            }
        }
        for (field, value) in record.fields { add(field, value, schema.indexes(ofField: field, in: type, isText: value.isText)) }
        func system(_ field: SystemField, _ value: FieldValue?) {
            guard let value else { return }
            add(field.rawValue, value, schema.indexes(of: field, in: type))
        }
        system(.createTime, record.creationDate.map(FieldValue.timestamp))
        system(.modTime, record.modificationDate.map(FieldValue.timestamp))
        system(.createdBy, record.creatorUserRecordID.map { .reference(Reference(recordID: $0)) })
        system(.modifiedBy, record.lastModifiedUserRecordID.map { .reference(Reference(recordID: $0)) })
        system(.parent, record.parent.map(FieldValue.reference))
        system(.share, record.share.map(FieldValue.reference))
        return Array(Set(entries)).sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test("field keys of 3,000 random records, in development and read lazily from stored bytes, equal the keys built value by value")
    func fieldEntriesAgree() throws {
        var random = RandomRecords(seed: 0xF1E1_0014)
        let schema = EffectiveSchema(.empty, environment: .development)
        let zoneKey = [UInt8](repeating: 3, count: 16)
        for index in 0..<3_000 {
            let record = random.record()
            let expected = Self.referenceFieldEntries(of: record, zoneKey: zoneKey, schema: schema)
            #expect(IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema) == expected, "record \(index)")
            let lazy = try RecordCodec.encode(record).withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            #expect(IndexKeys.fieldEntries(of: lazy, zoneKey: zoneKey, schema: schema) == expected, "lazy record \(index)")
        }
    }

    @Test("in production, a SORTABLE string has only its folded key, a QUERYABLE one its exact key too, an undeclared field none")
    func fieldEntriesFollowTheDeclaredIndexes() throws {
        let text = """
            DEFINE SCHEMA
                RECORD TYPE Note (
                    title STRING SORTABLE,
                    code STRING QUERYABLE,
                    labels LIST<STRING> QUERYABLE,
                    size INT64 SORTABLE,
                    body STRING SEARCHABLE
                );
            """
        let schema = EffectiveSchema(try SchemaParser.parse(text), environment: .production)
        var record = Record(recordType: "Note", recordID: RecordID(recordName: "n1", zoneID: ZoneID(zoneName: "z")))
        record["title"] = .string("Hello World")
        record["code"] = .string("AbC")
        record["labels"] = .list([.string("x"), .string("Y")])
        record["size"] = .int64(42)
        record["body"] = .string("not in the field index")
        record["other"] = .string("undeclared")
        let zoneKey = [UInt8](repeating: 9, count: 16)
        let keys = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema)
        #expect(keys == Self.referenceFieldEntries(of: record, zoneKey: zoneKey, schema: schema))
        func count(_ field: String) -> Int {
            let prefix = IndexKeys.fieldPrefix(zoneKey, type: "Note", field: field)
            return keys.filter { $0.starts(with: prefix) }.count
        }
        #expect(count("title") == 1)
        #expect(count("code") == 2)
        #expect(count("labels") == 4)
        #expect(count("size") == 1)
        #expect(count("body") == 0)
        #expect(count("other") == 0)
    }
}
