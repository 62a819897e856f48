import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Testing
@testable import CumulusViews

/// A record that is not stored is saved without reading its `refsOut` and `assetsOut`
/// entries (`Views.apply`): they exist for current records only. These tests hold
/// the views to that, and to the exact edges and counts a save, an edit, a delete, a
/// save again and a zone's deletion leave — not only to a rebuild, which applies the
/// same code and would repeat a wrong shortcut.
@Suite("Saving a record that is not stored")
struct NewRecordSaveTests {
    static let database = RecordDerivationTests.database
    static let zone = RecordDerivationTests.zone
    static let fileA = String(repeating: "a1", count: 32)
    static let fileB = String(repeating: "b2", count: 32)

    static func note(_ name: String, owner: String, file: String?, tag: String) -> Record {
        var record = Record(recordType: "Note", recordID: RecordID(recordName: name, zoneID: zone))
        record["title"] = .string("note \(name)")
        record["owner"] = .reference(Reference(recordID: RecordID(recordName: owner, zoneID: zone), action: .deleteSelf))
        if let file { record["file"] = .asset(Asset(fileChecksum: file, size: 1_000)) }
        record.creationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000)
        record.modificationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000)
        record.recordChangeTag = tag
        return record
    }

    static func delete(_ name: String) -> CommitRequest {
        CommitRequest(
            actor: "_owner", requestID: "delete-\(name)",
            events: [.recordDeleted(
                database: database, recordID: RecordID(recordName: name, zoneID: zone), recordType: "Note", cause: .direct)])
    }

    struct State: Equatable {
        var outgoing: [String: [String]] = [:]
        var incoming: [String: [String]] = [:]
        var files: [String: UInt64] = [:]
        /// `refsOut` and `assetsOut` keys with no `records` entry: must stay empty.
        var orphans: [String] = []
    }

    static func state(of node: RecordDerivationTests.Node) throws -> State {
        let views = node.views
        let zoneKey = views.zoneKeys.zone(database, zone)
        return try node.store.environment.read { txn in
            var state = State()
            for name in ["n1", "n2"] {
                let out = try views.outgoing(zoneKey, name, in: txn).map(\.targetName)
                if !out.isEmpty { state.outgoing[name] = out }
            }
            for owner in ["f1", "f2"] {
                let sources = try ["n1", "n2"].filter {
                    try views.refers($0, to: owner, action: .deleteSelf, zoneKey: zoneKey, in: txn)
                }
                if !sources.isEmpty { state.incoming[owner] = sources }
            }
            for (label, file) in [("A", fileA), ("B", fileB)] {
                guard let checksum = AssetChecksum(hex: file) else { continue }
                let count = try views.assetReferences(checksum, in: txn)?.count ?? 0
                if count > 0 { state.files[label] = count }
            }
            for table in [views.tables.refsOut, views.tables.assetsOut] {
                try txn.scan(table, prefix: []) { key, _ in
                    if try txn.get(views.tables.records, key: Array(key)) == nil { state.orphans.append(Hex.encode(Array(key))) }
                    return true
                }
            }
            return state
        }
    }

    @Test("new, edited, deleted, saved again and dropped with its zone: exact edges and file counts, none left behind")
    func lifecycle() throws {
        let steps: [(String, CommitRequest, State)] = [
            ("new", RecordDerivationTests.save([Self.note("n1", owner: "f1", file: Self.fileA, tag: "1")], "new"),
             State(outgoing: ["n1": ["f1"]], incoming: ["f1": ["n1"]], files: ["A": 1])),
            ("edited", RecordDerivationTests.save([Self.note("n1", owner: "f2", file: Self.fileB, tag: "2")], "edit"),
             State(outgoing: ["n1": ["f2"]], incoming: ["f2": ["n1"]], files: ["B": 1])),
            ("deleted", Self.delete("n1"), State()),
            ("saved again", RecordDerivationTests.save([Self.note("n1", owner: "f1", file: Self.fileA, tag: "3")], "again"),
             State(outgoing: ["n1": ["f1"]], incoming: ["f1": ["n1"]], files: ["A": 1])),
            ("a second holder", RecordDerivationTests.save([Self.note("n2", owner: "f1", file: Self.fileA, tag: "4")], "second"),
             State(outgoing: ["n1": ["f1"], "n2": ["f1"]], incoming: ["f1": ["n1", "n2"]], files: ["A": 2])),
            ("zone dropped", CommitRequest(
                actor: "_owner", requestID: "drop", events: [.zoneDeleted(database: Self.database, zoneID: Self.zone)]),
             State()),
            ("new after the zone", RecordDerivationTests.save([Self.note("n2", owner: "f2", file: Self.fileB, tag: "5")], "after"),
             State(outgoing: ["n2": ["f2"]], incoming: ["f2": ["n2"]], files: ["B": 1])),
        ]
        var requests: [CommitRequest] = []
        for (name, request, expected) in steps {
            requests.append(request)
            let node = try RecordDerivationTests.leader(requests)
            defer { node.remove() }
            #expect(try Self.state(of: node) == expected, "after \(name)")
        }
    }
}
