import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation
import Testing

@testable import CumulusReplication

/// Schema changes travel in the log: a follower applying the leader's frames builds
/// and drops the same indexes, in the same commits (issue #13).
@Suite("Follower apply: schemas")
struct FollowerSchemaTests {
    @Test("an index added to a populated type on the leader is built on the follower: equal digests, same answers")
    func indexBuildReplicates() async throws {
        let leader = try Container(path: ReplicationWorld.temporaryPath())
        defer { leader.close() }
        try await ReplicationWorld.makeCommits(300, on: leader)
        let development = SchemaID(container: ReplicationWorld.database(leader).id.container, environment: .development)
        let grown = try leader.schema(development)
        let item = try #require(grown.recordTypes.first)
        // Turn every index of the type off, then one back on.
        var off = grown
        var type = item
        type.fields = type.fields.map { FieldSchema(name: $0.name, type: $0.type, indexes: []) }
        off.setRecordType(type)
        try await leader.importSchema(SchemaPrinter.print(off), into: development)
        var on = off
        type.fields = type.fields.map { field in
            FieldSchema(name: field.name, type: field.type, indexes: field.name == "title" || field.name == "___recordID" ? [.queryable, .sortable] : [])
        }
        on.setRecordType(type)
        try await leader.importSchema(SchemaPrinter.print(on), into: development)

        let follower = try ReplicationWorld.follower(of: leader)
        defer { follower.close() }
        var next: UInt64 = 1
        while true {
            let frames = try leader.store.rawFrames(from: next, limit: 53, maxBytes: 1 << 20)
            if frames.isEmpty { break }
            _ = try await follower.writer.replicate(frames)
            next += UInt64(frames.count)
        }
        #expect(try ReplicationWorld.digests(follower) == ReplicationWorld.digests(leader))
        #expect(try follower.schema(development) == on)
        #expect(try follower.verify().isHealthy)
        let query = Query(recordType: item.name, sort: [QuerySort(key: .field("title"))])
        let zone = ZoneID(zoneName: "Lists", ownerName: ReplicationWorld.user)
        let fromLeader = try ReplicationWorld.database(leader).query(query, in: zone, resultsLimit: 20, as: ReplicationWorld.user)
        let fromFollower = try ReplicationWorld.database(follower).query(query, in: zone, resultsLimit: 20, as: ReplicationWorld.user)
        #expect(fromLeader.records.count == 20)
        #expect(fromFollower.records.map(\.recordID) == fromLeader.records.map(\.recordID))
    }
}
