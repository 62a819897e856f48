import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Testing

/// Token entries staged in `tokenPending` and merged into `tokenIndex` (``PendingTokens``):
/// a token search must answer as if every entry were merged, at every commit.
@Suite("Pending token entries")
struct PendingTokensTests {
    static let words = ["kiwi", "pear", "fig", "plum", "lime", "yuzu", "sloe", "quince", "medlar", "guava", "mango", "date"]

    /// Every name a token search finds, paging through the whole result.
    func search(_ world: EngineWorld, _ type: String, _ text: String, all: Bool, in zone: ZoneID) throws -> Set<String> {
        let query = Query(
            recordType: type,
            filters: [QueryFilter(key: .allTokens, comparator: all ? .containsAllTokens : .containsAnyTokens, value: .string(text))])
        var page = try world.db.query(query, in: zone, resultsLimit: 400, as: EngineWorld.user)
        var found = Set(page.records.map(\.recordID.recordName))
        while let cursor = page.cursor {
            page = try world.db.query(continuing: cursor, resultsLimit: 400, as: EngineWorld.user)
            found.formUnion(page.records.map(\.recordID.recordName))
        }
        return found
    }

    func count(_ world: EngineWorld, _ table: LMDBTable) throws -> Int {
        try world.container.store.environment.read { try $0.count(table) }
    }

    /// The names of the records with pending entries, in any zone.
    func pendingNames(_ world: EngineWorld) throws -> [String] {
        var names: [String] = []
        try world.container.store.environment.read { txn in
            try txn.scan(world.container.views.tables.tokenPending, prefix: []) { key, _ in
                names.append(String(decoding: UnsafeRawBufferPointer(rebasing: key[FeedKeys.length...]), as: UTF8.self))
                return true
            }
        }
        return names
    }

    @Test("token searches answer as a scan of the records would, before and after merges, a cascade staged as delete markers, deletes and re-creations under another type; verify and rebuild agree")
    func searchesMatchTheRecords() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var random = RandomRecords(seed: 0x70C_E45)
        // What every live record is and says: the model the searches are checked against.
        var model: [String: (type: String, words: Set<String>)] = [:]
        let tables = world.container.views.tables
        var sawPending = false
        var sawMerge = false

        func text() -> [String] { (0..<random.int(1...4)).map { _ in Self.words[random.int(0...Self.words.count - 1)] } }
        func check(_ round: Int) throws {
            for _ in 0..<4 {
                let type = random.chance(0.7) ? "Note" : "Memo"
                let asked = Array(Set(text().prefix(2)))
                let all = random.chance(0.5)
                let expected = Set(model.filter { _, value in
                    value.type == type
                        && (all ? asked.allSatisfy(value.words.contains) : asked.contains(where: value.words.contains))
                }.keys)
                let found = try search(world, type, asked.joined(separator: " "), all: all, in: zone)
                #expect(found == expected, "round \(round): \(type) \(all ? "all" : "any") of \(asked)")
            }
        }

        for round in 0..<60 {
            let pendingBefore = try count(world, tables.tokenPending)
            if round == 20 {
                // A cascade of more events than a pending commit takes: its deletes are
                // staged all the same, delete markers merged a batch per commit.
                // A record takes at most 750 deleteSelf references: two levels.
                try await world.save([Record.make("Owner", "owner", in: zone)])
                try await world.save((0..<2).map { Record.make("Owner", "mid\($0)", in: zone, ["owner": ref("owner", in: zone, .deleteSelf)]) })
                for batch in 0..<3 {
                    let children = (0..<400).map { index in
                        Record.make("Note", "child-\(batch)-\(index)", in: zone, [
                            "body": .string("kiwi child"), "owner": ref("mid\(index % 2)", in: zone, .deleteSelf),
                        ])
                    }
                    try await world.save(children)
                    for child in children { model[child.recordID.recordName] = ("Note", ["kiwi", "child"]) }
                }
                try await world.save([Record.make("Note", "last", in: zone, ["body": .string("kiwi")])])
                model["last"] = ("Note", ["kiwi"])
                #expect(try count(world, tables.tokenPending) > 0)
                try check(round)
                try await world.delete([id("owner", in: zone)])
                model = model.filter { !$0.key.hasPrefix("child-") }
                #expect(try count(world, tables.tokenPending) > 0, "the victims' markers not merged yet")
                try check(round)
                continue
            }
            // A small commit: new records, edits, deletes of live ones.
            var saves: [Record] = []
            var deletes: [RecordID] = []
            var touched = Set<String>()
            for _ in 0..<100 {
                let name = "r\(random.int(0...1_499))"
                guard touched.insert(name).inserted else { continue }
                if let live = model[name], random.chance(0.25) {
                    _ = live
                    deletes.append(id(name, in: zone))
                    model[name] = nil
                } else {
                    // A name deleted earlier may come back as the other type.
                    let type = model[name]?.type ?? (random.chance(0.7) ? "Note" : "Memo")
                    // Words in three fields, a list among them: the order fields are
                    // walked in differs between a saved record and a logged one.
                    let (body, title, tags) = (text(), text(), text())
                    saves.append(Record.make(type, name, in: zone, [
                        "body": .string(body.joined(separator: " ")), "title": .string(title.joined(separator: " ")),
                        "tags": .list(tags.map { .string($0) }),
                    ]))
                    model[name] = (type, Set(body + title + tags))
                }
            }
            if !saves.isEmpty { try await world.save(saves) }
            if !deletes.isEmpty { try await world.delete(deletes) }
            let pendingAfter = try count(world, tables.tokenPending)
            #expect(pendingAfter < PendingTokens.mergeThreshold)
            if pendingAfter > 0 { sawPending = true }
            if pendingAfter < pendingBefore { sawMerge = true }
            try check(round)
        }
        #expect(sawPending)
        #expect(sawMerge, "60 rounds of up to 100 records pass the merge threshold")
        try world.checkLiveAndRebuilt { try check(99) }
    }

    @Test("a cascade of thousands stages a delete marker per victim and later commits merge them a bounded batch each; searches skip the victims throughout, a victim's name re-created under another type is found as that type, and a save in the cascade's commit is written directly once what was pending is merged")
    func cascadeMarkersMergeInBatches() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let tables = world.container.views.tables
        // Six mids of 750 children each (a record takes at most 750 deleteSelf
        // references): a cascade of 4,507 records, more than four merge batches.
        try await world.save([Record.make("Owner", "owner", in: zone)])
        // Memo exists before a victim's name comes back as one: a new type would change
        // the schema, and a schema change merges everything pending.
        try await world.save([Record.make("Memo", "memo", in: zone, ["body": .string("seed")])])
        try await world.save((0..<6).map { Record.make("Owner", "mid\($0)", in: zone, ["owner": ref("owner", in: zone, .deleteSelf)]) })
        for batch in 0..<12 {
            try await world.save((0..<375).map { index in
                Record.make("Note", "child-\(batch)-\(index)", in: zone, [
                    "body": .string("kiwi child"), "owner": ref("mid\((batch * 375 + index) % 6)", in: zone, .deleteSelf),
                ])
            })
        }
        try await world.save([Record.make("Note", "keep", in: zone, ["body": .string("kiwi keep")])])
        #expect(try search(world, "Note", "kiwi", all: true, in: zone).count == 4_501)
        // `keep` is edited in the cascade's own commit, with its first version's entry
        // pending: the commit merges it first, then writes the edit directly.
        #expect(try pendingNames(world).contains("keep"))
        let edited = try world.fetch(id("keep", in: zone))
        var next = edited
        next["body"] = .string("pear keep")
        let result = try await world.db.modify(saving: [next], deleting: [id("owner", in: zone)], as: EngineWorld.user)
        #expect(result.itemErrors.isEmpty)
        #expect(try !pendingNames(world).contains("keep"), "merged, then written directly")
        var pending = try count(world, tables.tokenPending)
        #expect(pending >= PendingTokens.mergeThreshold, "the victims' markers, less one merged batch")
        #expect(try search(world, "Note", "kiwi", all: true, in: zone).isEmpty)
        #expect(try search(world, "Note", "pear", all: true, in: zone) == ["keep"])
        // A victim's name comes back as another type while its marker is pending.
        try await world.save([Record.make("Memo", "child-0-5", in: zone, ["body": .string("kiwi again")])])
        #expect(try search(world, "Memo", "kiwi", all: true, in: zone) == ["child-0-5"])
        #expect(try search(world, "Note", "kiwi child", all: false, in: zone).isEmpty)
        #expect(try world.container.verify().isHealthy, "verify compares what queries see, whatever is still pending")
        // That save's commit merged a batch; each later one merges at most a batch too,
        // until fewer than a batch are left.
        let afterMemo = try count(world, tables.tokenPending)
        #expect(afterMemo < pending && pending + 1 - afterMemo <= PendingTokens.mergeThreshold, "\(pending) → \(afterMemo)")
        pending = afterMemo
        var commits = 0
        while pending >= PendingTokens.mergeThreshold {
            try await world.save([Record.make("Note", "later\(commits)", in: zone, ["body": .string("plum")])])
            commits += 1
            let now = try count(world, tables.tokenPending)
            #expect(now < pending && pending + 1 - now <= PendingTokens.mergeThreshold, "\(pending) → \(now)")
            pending = now
            #expect(try search(world, "Note", "kiwi", all: false, in: zone).isEmpty)
        }
        #expect(commits >= 2)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try search(world, "Memo", "kiwi", all: true, in: zone) == ["child-0-5"])
            #expect(try search(world, "Note", "kiwi child pear", all: false, in: zone) == ["keep"])
            #expect(try search(world, "Note", "plum", all: true, in: zone).count == commits)
        }
    }

    @Test("an edit back to the words the index holds leaves nothing pending; a record created and deleted before a merge leaves nothing")
    func equalSidesAreDropped() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("kiwi")])])
        #expect(try pendingNames(world) == ["a"])
        // Enough other records to pass the threshold: `a` is merged with them.
        for batch in 0..<3 {
            try await world.save((0..<400).map { Record.make("Note", "o\(batch)-\($0)", in: zone, ["body": .string("fig")]) })
        }
        #expect(try !pendingNames(world).contains("a"), "merged")
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("pear")])])
        #expect(try pendingNames(world).contains("a"))
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("kiwi")])])
        #expect(try !pendingNames(world).contains("a"), "the index already holds kiwi for a")
        try await world.save([Record.make("Note", "new", in: zone, ["body": .string("plum")])])
        #expect(try pendingNames(world).contains("new"))
        try await world.delete([id("new", in: zone)])
        #expect(try !pendingNames(world).contains("new"), "never in the index, gone again")
        try world.checkLiveAndRebuilt { () throws in
            #expect(try search(world, "Note", "kiwi", all: true, in: zone) == ["a"])
            #expect(try search(world, "Note", "pear plum", all: false, in: zone).isEmpty)
        }
    }

    @Test("deleting a zone takes its pending entries, and another zone's stay")
    func zoneDeletionTakesPendingEntries() async throws {
        let world = try EngineWorld()
        let kept = try await world.makeZone("Kept")
        let gone = try await world.makeZone("Gone")
        try await world.save([Record.make("Note", "k", in: kept, ["body": .string("kiwi")])])
        try await world.save((0..<3).map { Record.make("Note", "g\($0)", in: gone, ["body": .string("kiwi")]) })
        #expect(try pendingNames(world).sorted() == ["g0", "g1", "g2", "k"])
        _ = try await world.db.deleteZones([gone], as: EngineWorld.user)
        #expect(try pendingNames(world) == ["k"])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try search(world, "Note", "kiwi", all: true, in: kept) == ["k"])
        }
    }

    @Test("a schema change that reindexes a type merges what is pending first, so the index then holds exactly the declared tokens")
    func schemaChangeMerges() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save((0..<5).map { Record.make("Note", "n\($0)", in: zone, ["body": .string("kiwi pear")]) })
        #expect(try count(world, world.container.views.tables.tokenPending) == 5)
        // A new field in development extends the type's schema and indexes.
        try await world.save([Record.make("Note", "n0", in: zone, ["body": .string("kiwi pear"), "extra": .string("fig")])])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try search(world, "Note", "kiwi", all: true, in: zone) == ["n0", "n1", "n2", "n3", "n4"])
            #expect(try search(world, "Note", "fig", all: true, in: zone) == ["n0"])
        }
    }

    @Test("a damaged pending entry fails a token search with an error, and a rebuild repairs it")
    func damagedEntryIsAnError() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([Record.make("Note", "a", in: zone, ["body": .string("kiwi")])])
        let tables = world.container.views.tables
        let key = ViewKeys.record(FeedKeys.zone(world.db.id, zone), "a")
        for damaged: [UInt8] in [[0, 0, 0], [0, 0, 0, 200, 1, 2], [0, 0, 0, 0, 0, 0, 0, 20] + [UInt8](repeating: 7, count: 20)] {
            try world.container.store.environment.write { txn in try txn.put(tables.tokenPending, key: key, value: damaged) }
            #expect(throws: (any Error).self) { try search(world, "Note", "kiwi", all: true, in: zone) }
        }
        #expect(try world.fetch(id("a", in: zone))["body"] == .string("kiwi"), "the record itself is untouched")
        try world.container.rebuild()
        #expect(try search(world, "Note", "kiwi", all: true, in: zone) == ["a"])
        #expect(try world.container.verify().isHealthy)
    }
}
