import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing
@testable import CumulusViews

@Suite("Record derivations")
struct RecordDerivationTests {
    static let database = DatabaseID(
        container: "iCloud.com.example.notes", environment: .production, scope: .private, owner: "_owner")
    static let zone = ZoneID(zoneName: "Notes", ownerName: "_owner")

    static func schemaText(searchable: String) -> String {
        """
        DEFINE SCHEMA
            RECORD TYPE Note (
                title STRING \(searchable == "title" ? "SEARCHABLE" : "QUERYABLE"),
                body STRING \(searchable == "body" ? "SEARCHABLE" : ""),
                priority INT64 SORTABLE,
                owner REFERENCE QUERYABLE
            );
            RECORD TYPE Folder (title STRING SEARCHABLE);
        """
    }

    static func schemaChange(searchable: String) -> CommitRequest {
        CommitRequest(
            actor: "", requestID: "schema-\(searchable)",
            events: [.schemaChanged(
                schema: SchemaID(container: database.container, environment: .production),
                text: schemaText(searchable: searchable), reason: .imported)])
    }

    static func note(_ index: Int, version: Int, type: String = "Note") -> Record {
        var record = Record(recordType: type, recordID: RecordID(recordName: "note-\(index)", zoneID: zone))
        record["title"] = .string("title \(index) version \(version) words\(index % 7)")
        record["body"] = .string("body of note \(index) with shared words and word\(version)")
        record["priority"] = .int64(Int64((index + version) % 4))
        record["owner"] = .reference(Reference(recordID: RecordID(recordName: "folder-\(index % 3)", zoneID: zone), action: .deleteSelf))
        record.creationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index))
        record.modificationDate = Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index * 10 + version))
        record.recordChangeTag = "t\(index)v\(version)"
        return record
    }

    static func save(_ records: [Record], _ id: String) -> CommitRequest {
        CommitRequest(
            actor: "_owner", requestID: id,
            events: records.map { .recordSaved(database: database, record: $0, changedKeys: $0.allKeys.sorted()) })
    }

    /// Saves, edits, a change of type, deletes, and schema changes that land inside a
    /// batch, so derivations made before it under the old schema meet records applied
    /// under the new one; one commit large enough to write its tokens directly.
    static func requests() -> [CommitRequest] {
        var requests = [schemaChange(searchable: "title")]
        for index in 0..<120 { requests.append(save([note(index, version: 0)], "new-\(index)")) }
        for index in stride(from: 0, to: 120, by: 3) { requests.append(save([note(index, version: 1)], "edit-\(index)")) }
        requests.append(save([note(7, version: 2, type: "Folder")], "retype"))
        requests.append(schemaChange(searchable: "body"))
        for index in stride(from: 1, to: 120, by: 4) { requests.append(save([note(index, version: 3)], "after-\(index)")) }
        for index in stride(from: 2, to: 60, by: 5) {
            requests.append(CommitRequest(
                actor: "_owner", requestID: "delete-\(index)",
                events: [.recordDeleted(
                    database: database, recordID: RecordID(recordName: "note-\(index)", zoneID: zone), recordType: "Note",
                    cause: .direct)]))
        }
        requests.append(save((200..<(200 + PendingTokens.directCommitEvents)).map { note($0, version: 0) }, "bulk"))
        for index in 200..<260 { requests.append(save([note(index, version: 4)], "bulk-edit-\(index)")) }
        return requests
    }

    struct Node {
        let directory: TemporaryDirectory
        let store: LogStore
        let views: Views

        init(_ label: String, copying source: LogStore? = nil) throws {
            directory = TemporaryDirectory("derivation-" + label)
            var options = LMDBEnvironment.Options()
            options.mapSize = 256 << 20
            options.durable = false
            let environment = try LMDBEnvironment(path: directory.path, options: options)
            store = try source.map { try LogStore.emptyCopy(in: environment, logID: $0.logID, epoch: $0.epoch) }
                ?? LogStore(environment: environment)
            views = try Views(environment: environment)
        }

        func digests() throws -> [ViewDigest] {
            try store.environment.read { txn in try views.digests(in: txn) }
        }

        func remove() { directory.remove() }
    }

    /// The leader's way: each commit appended and applied inline, in its own transaction.
    static func leader(_ requests: [CommitRequest]) throws -> Node {
        let node = try Node("leader")
        for request in requests { try append(request, to: node) }
        return node
    }

    /// Appends `request` to `node` as the leader does, applied inline in the same
    /// transaction: a failing apply appends nothing.
    static func append(_ request: CommitRequest, to node: Node) throws {
        let (_, outcome) = try node.store.appendWrite(catchUp: node.views.apply) { txn -> ((), AppendSession.Outcome) in
            var session = try node.store.beginAppend(in: txn)
            let commit = try session.append(request, now: Timestamp(millisecondsSince1970: 1), in: txn).commit
            try node.views.apply(commit, in: txn)
            return ((), try session.finish(in: txn))
        }
        node.store.didCommit(outcome)
    }

    /// A replay's and a streaming follower's way: frames in batches, each decoded and
    /// derived before its transaction (`PreparedFrames`).
    static func follow(_ leader: Node, into node: Node, batch: Int) throws {
        var decoder = FrameDecoder(store: leader.store)
        var next: UInt64 = 1
        while next <= leader.store.head.sequence {
            let frames = try leader.store.rawFrames(from: next, limit: batch, maxBytes: .max)
            let prepared = try PreparedFrames(frames, decoder: &decoder, views: node.views, environment: node.store.environment)
            let appended = try node.store.appendFrames(
                prepared.frames, decoded: prepared.decoded, catchUp: node.views.apply
            ) { index, commit, txn in
                try prepared.apply(index, commit, to: node.views, in: txn)
            }
            node.store.didCommit(appended.outcome)
            next += UInt64(frames.count)
        }
    }

    @Test("views applied with derivations made ahead equal views applied inline, byte for byte, across schema changes inside batches")
    func derivedEqualsInline() throws {
        let leader = try Self.leader(Self.requests())
        defer { leader.remove() }
        let expected = try leader.digests()
        for batch in [1, 7, 64, 10_000] {
            let follower = try Node("follower-\(batch)", copying: leader.store)
            defer { follower.remove() }
            try Self.follow(leader, into: follower, batch: batch)
            #expect(follower.store.head == leader.store.head)
            #expect(try follower.digests() == expected, "batches of \(batch)")
        }
    }

    @Test("a derivation is made for each saved record under the schema the views hold, and for nothing else")
    func derivationsFollowTheStoredSchema() throws {
        let node = try Node("schema")
        defer { node.remove() }
        let saved = Commit(
            sequence: 1, timestamp: Timestamp(millisecondsSince1970: 1), actor: "_owner", requestID: "r",
            clientChangeTokenData: nil,
            events: [
                .recordSaved(database: Self.database, record: Self.note(1, version: 0), changedKeys: []),
                .recordDeleted(
                    database: Self.database, recordID: RecordID(recordName: "x", zoneID: Self.zone), recordType: "Note",
                    cause: .direct),
            ],
            zoneSequences: [], databaseSequences: [])
        let before = try node.store.environment.read { node.views.derive([saved, nil], in: $0) }
        #expect(before.count == 2)
        #expect(before[1] == nil)
        let empty = try #require(Self.whole(before[0]?.derivation(at: 0)))
        #expect(before[0]?.derivation(at: 1) == nil)
        // No schema yet: nothing is searchable, so the token side is empty.
        #expect(empty.tokenSide == PendingTokens.side(of: nil, schema: EffectiveSchema(.empty, environment: .production)))
        try node.store.environment.write { txn in
            try node.views.replaceSchema(SchemaID(Self.database), withText: Self.schemaText(searchable: "title"), txn)
        }
        let after = try #require(
            Self.whole(try node.store.environment.read { node.views.derive([saved], in: $0) }[0]?.derivation(at: 0)))
        #expect(after.schemaStamp != empty.schemaStamp)
        #expect(after.tokenSide.count > 4)
        #expect(after.stored == (try RecordDerivation.stored(Self.note(1, version: 0))))
        // The writer's schema lookup finds the same stamp, so the derivation is used.
        let writer = try node.store.environment.read {
            try node.views.schemaCatalog.stampedSchema(SchemaID(Self.database), table: node.views.tables.schemas, in: $0)
        }
        #expect(writer.stamp == after.schemaStamp)
    }

    /// The whole derivation `ahead` holds, if it is one.
    static func whole(_ ahead: CommitDerivations.Ahead?) -> RecordDerivation? {
        if case .whole(let derivation) = ahead { derivation } else { nil }
    }
}
