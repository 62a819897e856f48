import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Testing
@testable import CumulusViews

/// A record's `byType` entry keeps its token side and field-index keys (`KeptEntries`),
/// and an update, a delete, a change of type and a schema change remove its old
/// entries from what was kept, decoding none of the old version's fields. These tests
/// hold the stored index to what the current records index, computed from the
/// records themselves after every commit — not to a rebuild, which applies the same
/// code and would keep the same wrong entries.
@Suite("Kept index entries")
struct KeptEntriesTests {
    static let zoneKey = [UInt8](repeating: 7, count: 16)

    static func schema(searchable: String) throws -> EffectiveSchema {
        EffectiveSchema(try SchemaParser.parse(RecordDerivationTests.schemaText(searchable: searchable)), environment: .production)
    }

    @Test("what is kept gives back the field keys and the side it was made from, for records with any mix of them")
    func roundTrip() throws {
        let schema = try Self.schema(searchable: "title")
        var records: [Record] = (0..<40).map { RecordDerivationTests.note($0, version: $0 % 3) }
        // No field at all; a list of strings, one repeated; a string with a zero byte
        // inside (escaped in its key); only an unindexed field.
        records.append(Record(recordType: "Note", recordID: RecordID(recordName: "bare", zoneID: RecordDerivationTests.zone)))
        var tricky = Record(recordType: "Note", recordID: RecordID(recordName: "tricky", zoneID: RecordDerivationTests.zone))
        tricky["title"] = .string("zero\u{0}inside")
        tricky["priority"] = .int64(-5)
        records.append(tricky)
        var quiet = Record(recordType: "Note", recordID: RecordID(recordName: "quiet", zoneID: RecordDerivationTests.zone))
        quiet["body"] = .string("not indexed here")
        records.append(quiet)
        for record in records {
            let name = record.recordID.recordName
            let byTypeKey = ViewKeys.byType(Self.zoneKey, record.recordType, name)
            let prefix = byTypeKey.prefix(byTypeKey.count - name.utf8.count)
            let fields = IndexKeys.fieldEntries(of: record, zoneKey: Self.zoneKey, schema: schema)
            let side = PendingTokens.side(of: record, schema: schema)
            let value = KeptEntries.value(side: side, fieldKeys: fields, prefixLength: prefix.count, nameLength: name.utf8.count)
            let kept = try #require(KeptEntries(value), "\(name)")
            #expect(kept.fieldKeys(prefix: prefix, name: name.utf8) == fields, "\(name)")
            #expect(kept.side == side, "\(name)")
            #expect(value.isEmpty == (fields.isEmpty && PendingTokens.isEmpty(side)), "\(name): empty only when nothing is kept")
        }
        #expect(KeptEntries([]) == KeptEntries.none)
        #expect(KeptEntries.none.side == PendingTokens.emptySide)
    }

    @Test("a damaged value is refused rather than read as other keys")
    func damaged() throws {
        let schema = try Self.schema(searchable: "title")
        let record = RecordDerivationTests.note(3, version: 0)
        let name = record.recordID.recordName
        let fields = IndexKeys.fieldEntries(of: record, zoneKey: Self.zoneKey, schema: schema)
        let value = KeptEntries.value(
            side: PendingTokens.side(of: record, schema: schema), fieldKeys: fields, prefixLength: 24,
            nameLength: name.utf8.count)
        #expect(KeptEntries(value) != nil)
        // Cut inside the last field part, inside the side, inside a field hash.
        #expect(KeptEntries(Array(value.dropLast())) == nil)
        #expect(KeptEntries(Array(value.prefix(10))) == nil)
        #expect(KeptEntries(PendingTokens.side(of: record, schema: schema) + [1, 2, 3]) == nil)
        // An unknown value kind after a field hash.
        #expect(KeptEntries(PendingTokens.emptySide + [UInt8](repeating: 1, count: 8) + [0xEE, 0, 0]) == nil)
        // The empty side alone is written as an empty value, never as four zeros.
        #expect(KeptEntries(PendingTokens.emptySide) == nil)
    }

    /// The field-index keys and `byType` values the current records of `node` call for,
    /// computed from each record under the stored schema, beside what is stored.
    static func expectedAndStored(_ node: RecordDerivationTests.Node) throws
        -> (expected: Set<[UInt8]>, stored: Set<[UInt8]>, keptMismatches: [String])
    {
        let views = node.views
        let zoneKey = views.zoneKeys.zone(RecordDerivationTests.database, RecordDerivationTests.zone)
        return try node.store.environment.read { txn in
            let schema = try views.schema(SchemaID(RecordDerivationTests.database), in: txn)
            var expected = Set<[UInt8]>()
            var mismatches: [String] = []
            try txn.scan(views.tables.records, prefix: zoneKey) { _, value in
                let record = try RecordCodec.decode(Array(value))
                let fields = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema)
                expected.formUnion(fields)
                let name = record.recordID.recordName
                let byTypeKey = ViewKeys.byType(zoneKey, record.recordType, name)
                let kept = try views.keptEntries(at: byTypeKey, txn)
                if kept.fieldKeys(prefix: byTypeKey.prefix(byTypeKey.count - name.utf8.count), name: name.utf8) != fields {
                    mismatches.append(name)
                }
                return true
            }
            var stored = Set<[UInt8]>()
            try txn.scan(views.tables.fieldIndex, prefix: []) { key, _ in
                stored.insert(Array(key))
                return true
            }
            return (expected, stored, mismatches)
        }
    }

    @Test("after every commit of saves, edits, a change of type, schema changes, deletes and a bulk save, the field index holds exactly the current records' keys")
    func fieldIndexFollowsRecords() throws {
        let node = try RecordDerivationTests.Node("kept")
        defer { node.remove() }
        for (step, request) in RecordDerivationTests.requests().enumerated() {
            try RecordDerivationTests.append(request, to: node)
            // Every commit up to the first edits, then every tenth: each kind of step is checked.
            guard step < 170 || step % 10 == 0 || request.requestID.hasPrefix("schema") || request.requestID == "retype"
            else { continue }
            let (expected, stored, mismatches) = try Self.expectedAndStored(node)
            // Compared as one flag: the sets hold thousands of keys, too many to print.
            let same = stored == expected
            #expect(same, "after \(request.requestID): \(stored.subtracting(expected).count) stale, \(expected.subtracting(stored).count) missing")
            #expect(mismatches.isEmpty, "after \(request.requestID): kept keys differ for \(mismatches.prefix(5))")
        }
        // Then every record deleted in one commit: no field entry and no kept value left.
        let names = try node.store.environment.read { txn in
            var names: [String] = []
            try txn.scan(node.views.tables.records, prefix: []) { _, value in
                names.append(try RecordReader(value).recordID.recordName)
                return true
            }
            return names
        }
        #expect(names.count > 1_000)
        try RecordDerivationTests.append(
            CommitRequest(
                actor: "_owner", requestID: "delete-all",
                events: names.map {
                    .recordDeleted(
                        database: RecordDerivationTests.database, recordID: RecordID(recordName: $0, zoneID: RecordDerivationTests.zone),
                        recordType: "Note", cause: .direct)
                }), to: node)
        let tables = node.views.tables
        // The token deletes are delete markers, a batch merged in that commit; merging
        // the rest takes out exactly what the index holds.
        #expect(try node.store.environment.read { try $0.count(tables.tokenPending) } > 0)
        try node.store.environment.write { try node.views.mergePendingTokens($0) }
        let left = try node.store.environment.read { txn in
            [
                try txn.count(tables.fieldIndex), try txn.count(tables.byType), try txn.count(tables.tokenIndex),
                try txn.count(tables.tokenPending),
            ]
        }
        #expect(left == [0, 0, 0, 0], "field entries, by-type entries, token entries, pending entries left")
    }
    @Test("a damaged by-type value fails the delete that reads it with an error, changing nothing, and the other records stay deletable")
    func damagedValueFailsItsDelete() throws {
        let node = try RecordDerivationTests.Node("damaged")
        defer { node.remove() }
        func append(_ request: CommitRequest) throws { try RecordDerivationTests.append(request, to: node) }
        try append(RecordDerivationTests.schemaChange(searchable: "title"))
        try append(RecordDerivationTests.save((0..<3).map { RecordDerivationTests.note($0, version: 0) }, "three"))
        let views = node.views
        let zoneKey = views.zoneKeys.zone(RecordDerivationTests.database, RecordDerivationTests.zone)
        let damagedKey = ViewKeys.byType(zoneKey, "Note", "note-1")
        // Its side cut short: a length that runs past the value.
        try node.store.environment.write { txn in try txn.put(views.tables.byType, key: damagedKey, value: [0, 0, 1, 0, 9]) }
        let head = node.store.head
        func delete(_ name: String) -> CommitRequest {
            CommitRequest(
                actor: "_owner", requestID: "delete-\(name)",
                events: [.recordDeleted(
                    database: RecordDerivationTests.database,
                    recordID: RecordID(recordName: name, zoneID: RecordDerivationTests.zone), recordType: "Note", cause: .direct)])
        }
        #expect(throws: StorageError.self) { try append(delete("note-1")) }
        #expect(node.store.head == head, "nothing appended")
        let stillThere = try node.store.environment.read { txn in
            try views.storedHeader(at: ViewKeys.record(zoneKey, "note-1"), txn) != nil
        }
        #expect(stillThere)
        try append(delete("note-2"))
        #expect(node.store.head.sequence == head.sequence + 1)
    }
}
