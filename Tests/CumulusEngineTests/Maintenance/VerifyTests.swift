import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Testing

@Suite("Rebuild and verify")
struct VerifyTests {
    @Test("verify passes on a healthy directory and names the table and key after a view entry is altered")
    func verifyFindsTampering() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save((0..<30).map { Record.make("T", "r\($0)", in: zone, ["n": .int64(Int64($0))]) })
        #expect(try world.container.verify().isHealthy)
        // Alter one stored record behind the engine's back.
        let views = world.container.views
        let key = ViewKeys.record(FeedKeys.zone(world.db.id, zone), "r7")
        try world.container.store.environment.write { txn in
            guard var bytes = try txn.get(views.tables.records, key: key) else { return }
            bytes[bytes.count - 1] ^= 1
            try txn.put(views.tables.records, key: key, value: bytes)
        }
        let report = try world.container.verify()
        #expect(!report.isHealthy)
        let bad = report.tables.filter { !$0.matches }
        #expect(bad.map(\.live.table) == ["records"])
        #expect(bad.first?.firstDifference == key.map { String(format: "%02x", $0) }.joined())
        // A rebuild repairs it.
        try world.container.rebuild()
        #expect(try world.container.verify().isHealthy)
        #expect(try world.fetch(id("r7", in: zone))["n"] == .int64(7))
    }

    /// 1,200 notes of three words each, in three saves of 400: the third fills the
    /// pending table, whose merge writes blocks and leaves the rest pending.
    static func notesInBlocks() async throws -> (EngineWorld, ZoneID) {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        for batch in 0..<3 {
            try await world.save((0..<400).map {
                Record.make("Note", "n\(batch)-\($0)", in: zone, ["body": .string("kiwi pear w\($0 % 7)")])
            })
        }
        return (world, zone)
    }

    @Test("verify names the posting a token index lacks, whatever blocks hold the rest")
    func verifyNamesAMissingPosting() async throws {
        let (world, _) = try await Self.notesInBlocks()
        #expect(try world.container.verify().isHealthy)
        let environment = world.container.store.environment
        let tokenIndex = world.container.views.tables.tokenIndex
        var postings: [[UInt8]] = []
        try environment.read { txn in
            try txn.scanLogicalKeys(tokenIndex) { key in
                postings.append(Array(key))
                return true
            }
            #expect(try txn.count(tokenIndex) < postings.count / 10, "postings are kept in blocks")
        }
        #expect(postings.count >= 2_400)
        // The third save's entries are merged a batch at a time: some are still pending,
        // and verify counts the postings queries see, theirs too.
        let seen = try #require(try world.container.viewDigests().first { $0.table == "tokenIndex" }).entries
        #expect(seen == 3_600)
        let victim = postings[postings.count / 2]
        try environment.write { try $0.deferDelete(tokenIndex, key: victim) }
        let report = try world.container.verify()
        let bad = report.tables.filter { !$0.matches }
        #expect(bad.map(\.live.table) == ["tokenIndex"])
        #expect(bad.first?.live.entries == seen - 1)
        #expect(bad.first?.firstDifference == victim.map { String(format: "%02x", $0) }.joined())
        try world.container.rebuild()
        #expect(try world.container.verify().isHealthy)
    }

    @Test("verify counts a pending entry that takes out postings the index never held as damage, though a merge would hide it")
    func verifyNamesAPendingEntryAtOddsWithTheIndex() async throws {
        let (world, zone) = try await Self.notesInBlocks()
        let seen = try #require(try world.container.viewDigests().first { $0.table == "tokenIndex" }).entries
        let tables = world.container.views.tables
        let zoneKey = FeedKeys.zone(world.db.id, zone)
        // A delete marker for a record that never existed, taking out the three words
        // a merged record holds: its kept side, under another name.
        try world.container.store.environment.write { txn in
            let kept = try #require(try txn.get(tables.byType, key: ViewKeys.byType(zoneKey, "Note", "n0-0")))
            let length = kept.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            let side = Array(kept.prefix(4 + length))
            try txn.put(tables.tokenPending, key: ViewKeys.record(zoneKey, "ghost"), value: side + [0, 0, 0, 0])
        }
        let report = try world.container.verify()
        let bad = report.tables.filter { !$0.matches }
        #expect(bad.map(\.live.table) == ["tokenIndex"])
        #expect(bad.first?.live.entries == seen + 3, "each posting it would take out, counted as damage")
        #expect(bad.first?.firstDifference?.hasSuffix(Hex.encode(Array("ghost".utf8))) == true)
        try world.container.rebuild()
        #expect(try world.container.verify().isHealthy)
    }

    @Test("views an older format built (token entries without creation times, none pending) are rebuilt from the log on a writable open")
    func olderViewsFormatRebuilt() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Note", "b", in: zone, ["body": .string("kiwi pear")])])
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("pear fig")])])
        let environment = world.container.store.environment
        let tables = world.container.views.tables
        // Make the directory look as format 2 left it: every token entry in the index
        // (nothing pending), the name straight after the token's terminator, and the
        // meta entry saying 2.
        try environment.write { txn in
            #expect(try txn.count(tables.tokenPending) == 2, "two small commits' tokens are pending")
            try txn.clear(tables.tokenPending)
            let prefix = IndexKeys.tokenPrefix(FeedKeys.zone(world.db.id, zone), type: "Note")
            for (word, name) in [("kiwi", "b"), ("pear", "b"), ("pear", "a"), ("fig", "a")] {
                try txn.put(tables.tokenIndex, key: IndexKeys.tokenKey(prefix, word) + Array(name.utf8), value: [])
            }
            try txn.put(try DataLayout.open(.viewsState, in: environment), key: Array("viewsFormat".utf8), value: [2])
        }
        #expect(try ViewRebuilder.storedFormat(in: environment) == 2)
        // Format 2's entries are not blocks of postings: verify finds them damaged.
        #expect((try? world.container.verify().isHealthy) != true, "format-2 token entries differ from a rebuild")
        // What `Container.init` does when it opens a directory writable.
        #expect(try ViewRebuilder.upgradeIfNeeded(world.container.views, from: world.container.store))
        #expect(try ViewRebuilder.storedFormat(in: environment) == ViewRebuilder.format)
        #expect(!(try ViewRebuilder.upgradeIfNeeded(world.container.views, from: world.container.store)), "only once")
        #expect(try world.container.verify().isHealthy)
        let search = Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("pear"))])
        #expect(try world.db.query(search, in: zone, as: EngineWorld.user).records.map(\.recordID.recordName) == ["a", "b"])
    }

    @Test("a read-only open of views an older format built is refused, saying how to upgrade; writable, it upgrades")
    func olderViewsFormatRefusedReadOnly() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("pear fig")])])
        let environment = world.container.store.environment
        try environment.write { txn in
            try txn.put(try DataLayout.open(.viewsState, in: environment), key: Array("viewsFormat".utf8), value: [2])
        }
        world.container.close()
        var options = LMDBEnvironment.Options()
        options.readOnly = true
        do {
            _ = try Container(path: world.path, environmentOptions: options)
            Issue.record("a read-only open of format-2 views must be refused")
        } catch let error as StorageError {
            #expect(error.description.contains("layout 2"))
            #expect(error.description.contains("cumulus verify --data \(world.path)"))
        }
        // Writable, the same directory is rebuilt; read-only then opens and answers.
        try Container(path: world.path).close()
        let reader = try Container(path: world.path, environmentOptions: options)
        defer { reader.close() }
        #expect(try ViewRebuilder.storedFormat(in: reader.store.environment) == ViewRebuilder.format)
        let search = Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string("fig"))])
        let db = reader.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.user)
        #expect(try db.query(search, in: zone, as: EngineWorld.user).records.map(\.recordID.recordName) == ["a"])
    }

    @Test("verify reports a damaged log frame")
    func verifyFindsLogDamage() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("T", "a", in: zone)])
        let store = world.container.store
        guard var frame = try store.frameBytes(2) else { return }
        frame[10] ^= 0xFF
        let log = try store.logEnvironment.table("log")
        try store.logEnvironment.write { txn in try txn.put(log, key: BigEndian.bytes(UInt64(2)), value: frame) }
        let report = try? world.container.verify()
        #expect(report?.chain.firstBad == 2 || report == nil)
    }
}
