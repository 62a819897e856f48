import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation
import Synchronization
import Testing

/// Views of layout 7 keep no record's words, those of layout 8 keep them in a table of
/// their own, and those of layout 9 keep them but not the record's field-index keys;
/// this build's apply reads both from each record's `byType` entry to find its index
/// entries on an update or a delete. A writable open fills them in place
/// (`ViewMigration`), from the records alone, so it works with a truncated log too.
@Suite("Views migration in place")
struct ViewMigrationTests {
    static let user = EngineWorld.user

    /// Empties every `byType` value of `container` (the kept sides) and returns the
    /// entries that held one, by key.
    static func takeSides(_ container: Container) throws -> [(key: [UInt8], side: [UInt8])] {
        let byType = container.views.tables.byType
        return try container.store.environment.write { txn in
            var sides: [(key: [UInt8], side: [UInt8])] = []
            try txn.scan(byType, prefix: []) { key, value in
                if !value.isEmpty { sides.append((Array(key), Array(value))) }
                return true
            }
            for (key, _) in sides { try txn.put(byType, key: key, value: []) }
            return sides
        }
    }

    /// Marks the views of `container` as of `layout`.
    static func mark(_ container: Container, layout: UInt8) throws {
        let environment = container.store.environment
        try environment.write { txn in
            try txn.put(try DataLayout.open(.viewsState, in: environment), key: Array("viewsFormat".utf8), value: [layout])
        }
    }

    /// Turns the views of `container` back into what layout 7 left (no kept sides),
    /// layout 8 left (the sides in `tokenSides`, under zone key ‖ name) or layout 9 left
    /// (each side alone in its `byType` entry, no field keys).
    static func makeLayout(_ layout: UInt8, _ container: Container) throws {
        let kept = try takeSides(container)
        // A kept value starts with the side: u32 length ‖ that many bytes (0: no word).
        let sides = kept.compactMap { entry -> (key: [UInt8], side: [UInt8])? in
            let length = entry.side.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            return length == 0 ? nil : (entry.key, Array(entry.side.prefix(4 + length)))
        }
        if layout == 9 {
            let byType = container.views.tables.byType
            try container.store.environment.write { txn in
                for (key, side) in sides { try txn.put(byType, key: key, value: side) }
            }
        }
        if layout == 8 {
            let environment = container.store.environment
            let table = try environment.table("tokenSides")
            try environment.write { txn in
                // A byType key is zone key (16) ‖ type hash (8) ‖ name.
                for (key, side) in sides { try txn.put(table, key: Array(key[..<16] + key[24...]), value: side) }
            }
        }
        try mark(container, layout: layout)
    }

    static func counts(_ container: Container) throws -> (index: Int, pending: Int, sides: Int, fields: Int) {
        let tables = container.views.tables
        return try container.store.environment.read { txn in
            var sides = 0
            try txn.scan(tables.byType, prefix: []) { _, value in
                if !value.isEmpty { sides += 1 }
                return true
            }
            return (
                try txn.count(tables.tokenIndex), try txn.count(tables.tokenPending), sides, try txn.count(tables.fieldIndex)
            )
        }
    }

    @Test(
        "views of layouts 7, 8 and 9 over a truncated log are migrated in place on a writable open: what each record keeps equals what saving made, and deleting every record afterwards leaves no token or field entry behind",
        arguments: [UInt8(7), 8, 9])
    func migratedOverTruncatedLog(layout: UInt8) async throws {
        let temporary = TemporaryDirectory("migration")
        defer { temporary.remove() }
        let path = temporary.path
        let zone = ZoneID(zoneName: "Lists", ownerName: Self.user)
        var names: [String] = []
        let before: [ViewDigest]
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: EngineWorld.containerID, user: Self.user)
            _ = try await db.saveZones([zone], as: Self.user)
            // Every record below one root (deleteSelf), so one delete can cascade to all.
            let root = Record.make("List", "root", in: zone)
            let middles = (0..<2).map { Record.make("List", "m\($0)", in: zone, ["parentList": ref("root", in: zone, .deleteSelf)]) }
            try await save([root] + middles)
            // At most 750 deleteSelf references per target: the notes alternate.
            var made = 0
            func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
                made += 1
                return Record.make("Note", name, in: zone, fields.merging(["list": ref("m\(made % 2)", in: zone, .deleteSelf)]) { a, _ in a })
            }
            func save(_ records: [Record]) async throws {
                let result = try await db.modify(saving: records, savePolicy: .allKeys, atomic: true, as: Self.user)
                #expect(result.itemErrors.isEmpty, "\(result.itemErrors)")
            }
            // Operations of 400 (their entries pending, merged once 1,024 are), a record
            // without any word, small saves whose entries stay pending, and an edit
            // that drops words.
            let bulk = (0..<1_100).map { note("b\($0)", ["body": .string("word\($0 % 7) common")]) }
            for start in stride(from: 0, to: bulk.count, by: 400) {
                let part = Array(bulk[start..<min(start + 400, bulk.count)])
                try await save(part)
            }
            // Before the small saves: its new field grows the schema, which merges what is pending.
            try await save([note("q", ["size": .int64(3)])])
            for index in 0..<10 {
                try await save([note("s\(index)", ["body": .string("small\(index) kiwi")])])
            }
            try await save([note("b3", ["body": .string("pear")])])
            names = ["root", "m0", "m1"] + bulk.map(\.recordID.recordName) + (0..<10).map { "s\($0)" } + ["q"]
            let snapshot = try container.store.takeViewsSnapshot()
            #expect(try container.store.dropCommits(through: snapshot.sequence, limit: 100) > 0)
            #expect(throws: StorageError.self, "the log no longer holds what a rebuild needs") {
                try ViewRebuilder.requireWholeLog(container.store)
            }
            let counts = try Self.counts(container)
            #expect(counts.pending > 0 && counts.index > 0)
            #expect(counts.sides == 1_114, "every record keeps its side or its field keys (the list reference)")
            #expect(counts.fields > 0)
            before = try container.viewDigests()
            try Self.makeLayout(layout, container)
            #expect(try container.viewDigests() != before)
            container.close()
        }
        let container = try Container(path: path)
        defer { container.close() }
        #expect(try ViewRebuilder.storedFormat(in: container.store.environment) == ViewRebuilder.format)
        if layout == 8 {
            let leftover = try container.store.environment.table("tokenSides")
            #expect(try container.store.environment.read { try $0.count(leftover) } == 0, "layout 8's table is emptied")
        }
        #expect(try container.viewDigests() == before, "the migrated views are what this build's saves made")
        let db = container.privateDatabase(container: EngineWorld.containerID, user: Self.user)
        let search = Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("pear"))])
        #expect(try db.query(search, in: zone, as: Self.user).records.map(\.recordID.recordName) == ["b3"])
        // Deleting the root cascades to all 1,114 records in one commit, which stages
        // a delete marker per record, each its kept side, and merges a bounded batch.
        let result = try await db.modify(deleting: [RecordID(recordName: "root", zoneID: zone)], atomic: true, as: Self.user)
        #expect(result.itemErrors.isEmpty)
        #expect(try db.fetch(names.map { RecordID(recordName: $0, zoneID: zone) }, as: Self.user).allSatisfy {
            (try? $0.result.get()) == nil
        })
        let after = try Self.counts(container)
        #expect(after.sides == 0 && after.fields == 0, "\(after)")
        // The markers not merged yet take out exactly what the index still holds: the
        // token index as queries see it is empty, and no marker names a posting the
        // index lacks (each would count as an entry).
        #expect(after.pending > 0 && after.pending < 1_114, "\(after)")
        #expect(try container.viewDigests().first { $0.table == "tokenIndex" }?.entries == 0)
    }

    @Test("views of the current layout are not migrated, and migrated views are not migrated again")
    func migrationOnlyOnce() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("fig")])])
        let environment = world.container.store.environment
        #expect(!(try ViewMigration.migrateIfNeeded(world.container.views, in: environment)))
        try Self.makeLayout(7, world.container)
        #expect(try ViewMigration.migrateIfNeeded(world.container.views, in: environment))
        #expect(!(try ViewMigration.migrateIfNeeded(world.container.views, in: environment)))
        try world.checkLiveAndRebuilt {
            let search = Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("fig"))])
            let found = try world.db.query(search, in: zone, as: Self.user)
            #expect(found.records.map(\.recordID.recordName) == ["a"])
        }
    }
    @Test("a data directory written by main at layout 9 (bdf2c7b, by `cumulus serve`) is migrated in place on open: verified, its queries answer as before, and a cascade afterwards leaves no index entry behind")
    func layout9DirectoryFromMain() async throws {
        let temporary = TemporaryDirectory("layout9")
        defer { temporary.remove() }
        let path = temporary.path
        // A zone, a list and 30 items referring to it (DELETE_SELF), five items' title and
        // priority edited, one item deleted; stopped cleanly (Tests/Fixtures).
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures")
        for (name, file) in [("views", path + "/data.mdb"), ("log", DataLayout.logPath(path) + "/data.mdb")] {
            let compressed = try [UInt8](Data(contentsOf: fixtures.appendingPathComponent("layout9-main-bdf2c7b-\(name).mdb.zst")))
            let bytes = try ZstdDecompressor().decompress(compressed, dictionary: nil, maxOutputSize: 16 << 20)
            try FileManager.default.createDirectory(
                atPath: URL(fileURLWithPath: file).deletingLastPathComponent().path, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
        }
        let owner = "_2fed908925a6754fcfaf2396de8f668a"
        let zone = ZoneID(zoneName: "Lists", ownerName: owner)
        let migrated = Mutex(0)
        let container = try Container(path: path, migrationObserver: { visited in migrated.withLock { $0 = visited } })
        defer { container.close() }
        // Migrated in place, not remade from the log: the views were closed cleanly.
        #expect(migrated.withLock { $0 } == 30)
        #expect(container.store.head.sequence == 8)
        #expect(try ViewRebuilder.storedFormat(in: container.store.environment) == ViewRebuilder.format)
        #expect(try container.verify().isHealthy, "the migrated views equal a rebuild from the log")
        let counts = try Self.counts(container)
        #expect(counts.sides == 30 && counts.fields > 0, "every record keeps its field keys: \(counts)")
        let db = container.privateDatabase(container: "iCloud.com.example.cumulus", user: owner)
        let edited = Query(recordType: "TodoItem", filters: [QueryFilter(key: .field("priority"), comparator: .equals, value: .int64(9))])
        #expect(try db.query(edited, in: zone, as: owner).records.map(\.recordID.recordName).sorted() == (0..<5).map { "item-\($0)" })
        let pear = Query(recordType: "TodoItem", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("pear"))])
        #expect(try db.query(pear, in: zone, as: owner).records.count == 5)
        // An edit after the migration moves the record's entries from what it now keeps.
        let item = try #require(try db.fetch([RecordID(recordName: "item-7", zoneID: zone)], as: owner).first?.result.get())
        var changed = item
        changed["priority"] = .int64(9)
        #expect(try await db.modify(saving: [changed], as: owner).itemErrors.isEmpty)
        #expect(try db.query(edited, in: zone, as: owner).records.count == 6)
        let result = try await db.modify(deleting: [RecordID(recordName: "groceries", zoneID: zone)], atomic: true, as: owner)
        #expect(result.itemErrors.isEmpty)
        let after = try Self.counts(container)
        // Its records' entries were all still pending (never merged): deleting them
        // takes the entries, and leaves no marker.
        #expect(after.index == 0 && after.pending == 0 && after.sides == 0 && after.fields == 0, "\(after)")
        #expect(try container.verify().isHealthy)
    }
}
