import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Queries")
struct QueryTests {
    func filter(_ key: String, _ comparator: QueryComparator, _ value: FieldValue, distance: Double? = nil) -> QueryFilter {
        QueryFilter(key: QueryKey(name: key), comparator: comparator, value: value, distance: distance)
    }

    func names(_ result: QueryResult) -> [String] { result.records.map(\.recordID.recordName) }

    @Test("items whose owningList is this list (the seed's query), via the reference index")
    func itemsOfList() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save(["groceries", "chores"].map { Record.make("TodoList", $0, in: zone) })
        var items: [Record] = []
        for index in 0..<30 {
            let list = index % 3 == 0 ? "chores" : "groceries"
            items.append(Record.make("TodoItem", "item\(String(format: "%02d", index))", in: zone, [
                "owningList": ref(list, in: zone, .deleteSelf), "title": .string("task \(index)"),
            ]))
        }
        try await world.save(items)
        let query = Query(recordType: "TodoItem", filters: [
            filter("owningList", .equals, .reference(Reference(recordID: id("chores", in: zone)))),
        ])
        try world.checkLiveAndRebuilt { () throws in
            let result = try world.db.query(query, in: zone, as: EngineWorld.user)
            #expect(names(result) == (0..<30).filter { $0 % 3 == 0 }.map { "item\(String(format: "%02d", $0))" })
            #expect(result.cursor == nil)
        }
        // The action is ignored; a placeholder owner means the database's owner.
        let loose = Query(recordType: "TodoItem", filters: [
            filter("owningList", .equals, .reference(Reference(recordID: RecordID(recordName: "chores", zoneID: ZoneID(zoneName: "Lists"))))),
        ])
        #expect(try world.db.query(loose, in: zone, as: EngineWorld.user).records.count == 10)
    }

    @Test("an artist's artworks, across all zones of the database")
    func artistsArtworks() async throws {
        let world = try EngineWorld()
        let gallery = try await world.makeZone("Gallery")
        try await world.save([
            Record.make("Artist", "monet", in: gallery), Record.make("Artist", "manet", in: gallery),
            Record.make("Artwork", "lilies", in: gallery, ["artist": ref("monet", in: gallery)]),
            Record.make("Artwork", "olympia", in: gallery, ["artist": ref("manet", in: gallery)]),
            Record.make("Artwork", "haystacks", in: gallery, ["artist": ref("monet", in: gallery)]),
        ])
        let query = Query(
            recordType: "Artwork", filters: [filter("artist", .equals, .reference(Reference(recordID: id("monet", in: gallery))))])
        #expect(names(try world.db.query(query, as: EngineWorld.user)) == ["haystacks", "lilies"])
    }

    @Test("token search: case and accents folded, several tokens ANDed, stop words ignored")
    func tokenSearch() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Note", "a", in: zone, ["body": .string("Café au lait in the Morning")]),
            Record.make("Note", "b", in: zone, ["body": .string("cafe crème"), "tags": .list([.string("MORNING")])]),
            Record.make("Note", "c", in: zone, ["body": .string("tea in the evening")]),
        ])
        func search(_ text: String) throws -> [String] {
            names(try world.db.query(
                Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAllTokens, value: .string(text))]),
                in: zone, as: EngineWorld.user))
        }
        try world.checkLiveAndRebuilt { () throws in
            #expect(try search("CAFE") == ["a", "b"])
            #expect(try search("café morning") == ["a", "b"])
            #expect(try search("the morning") == ["a", "b"])
            #expect(try search("evening tea") == ["c"])
            #expect(try search("lait evening") == [])
        }
        let any = Query(recordType: "Note", filters: [QueryFilter(key: .allTokens, comparator: .containsAnyTokens, value: .string("lait tea"))])
        #expect(names(try world.db.query(any, in: zone, as: EngineWorld.user)) == ["a", "c"])
    }

    @Test("token search over records created across many commits, names out of creation order, after edits and deletes: equal to checking every record")
    func tokenSearchAcrossCommits() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var random = SeededRandom(seed: 0x70_4E5E)
        let vocabulary = ["apple", "pear", "plum", "fig", "kiwi", "lime"]
        func text() -> [String] { (0..<(1 + Int(random.next() % 4))).map { _ in vocabulary[Int(random.next() % 6)] } }
        // Names run against creation order, so the index's (creation, name) order and
        // the result's name order differ; each commit is a later creation time.
        var bodies: [String: [String]] = [:]
        for commit in 0..<8 {
            var records: [Record] = []
            for slot in 0..<15 {
                let name = String(format: "n%03d", 999 - commit * 15 - slot * 7 % 15)
                let words = text()
                bodies[name] = words
                records.append(Record.make("Note", name, in: zone, ["body": .string(words.joined(separator: " "))]))
            }
            try await world.save(records)
        }
        // Edits keep the creation time and change the words; deletes drop entries.
        let names = bodies.keys.sorted()
        var edits: [Record] = []
        for name in names where random.next() % 4 == 0 {
            let words = text()
            bodies[name] = words
            edits.append(Record.make("Note", name, in: zone, ["body": .string(words.joined(separator: " "))]))
        }
        try await world.save(edits)
        let gone = names.filter { _ in random.next() % 6 == 0 }
        try await world.delete(ids(gone, in: zone))
        for name in gone { bodies[name] = nil }
        func search(_ words: [String], all: Bool) throws -> [String] {
            let comparator: QueryComparator = all ? .containsAllTokens : .containsAnyTokens
            let query = Query(
                recordType: "Note",
                filters: [QueryFilter(key: .allTokens, comparator: comparator, value: .string(words.joined(separator: " ")))])
            return self.names(try world.db.query(query, in: zone, resultsLimit: 400, as: EngineWorld.user))
        }
        try world.checkLiveAndRebuilt { () throws in
            for round in 0..<40 {
                let words = text()
                let all = round % 2 == 0
                let expected = bodies.filter { _, body in
                    all ? words.allSatisfy(body.contains) : words.contains(where: body.contains)
                }.keys.sorted()
                #expect(try search(words, all: all) == expected, "\(all ? "all" : "any") of \(words)")
            }
        }
    }

    @Test("BEGINSWITH is case-sensitive; string equality is not")
    func stringCase() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("City", "1", in: zone, ["name": .string("Paris")]),
            Record.make("City", "2", in: zone, ["name": .string("paris")]),
            Record.make("City", "3", in: zone, ["name": .string("Pamplona")]),
        ])
        func run(_ filters: [QueryFilter]) throws -> [String] {
            names(try world.db.query(Query(recordType: "City", filters: filters), in: zone, as: EngineWorld.user))
        }
        #expect(try run([filter("name", .beginsWith, .string("Pa"))]) == ["1", "3"])
        #expect(try run([filter("name", .beginsWith, .string("pa"))]) == ["2"])
        #expect(try run([filter("name", .equals, .string("PARIS"))]) == ["1", "2"])
        #expect(try run([filter("name", .notEquals, .string("paris"))]) == ["3"])
        #expect(try run([filter("name", .in, .list([.string("pamplona"), .string("rome")]))]) == ["3"])
    }

    @Test("list membership: CONTAINS, ANY, IN on lists, NOT")
    func listMembership() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Post", "p1", in: zone, ["tags": .list([.string("swift"), .string("server")])]),
            Record.make("Post", "p2", in: zone, ["tags": .list([.string("swift")])]),
            Record.make("Post", "p3", in: zone, ["tags": .list([])]),
            Record.make("Post", "p4", in: zone),
        ])
        func run(_ comparator: QueryComparator, _ value: FieldValue) throws -> [String] {
            names(try world.db.query(Query(recordType: "Post", filters: [filter("tags", comparator, value)]), in: zone, as: EngineWorld.user))
        }
        #expect(try run(.listContains, .string("swift")) == ["p1", "p2"])
        #expect(try run(.listContains, .string("server")) == ["p1"])
        #expect(try run(.notListContains, .string("server")) == ["p2", "p3", "p4"])
        #expect(try run(.listContainsAll, .list([.string("swift"), .string("server")])) == ["p1"])
        #expect(try run(.listContainsAny, .list([.string("server"), .string("go")])) == ["p1"])
        #expect(try run(.listMemberBeginsWith, .string("ser")) == ["p1"])
    }

    @Test("distance filter and sort by distance, in metres")
    func distance() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let london = Location(latitude: 51.5074, longitude: -0.1278)
        try await world.save([
            Record.make("Place", "greenwich", in: zone, ["at": .location(Location(latitude: 51.4769, longitude: -0.0005))]),  // ~9.4 km
            Record.make("Place", "westminster", in: zone, ["at": .location(Location(latitude: 51.4995, longitude: -0.1248))]),  // ~0.9 km
            Record.make("Place", "paris", in: zone, ["at": .location(Location(latitude: 48.8566, longitude: 2.3522))]),  // ~344 km
        ])
        let near = Query(
            recordType: "Place", filters: [filter("at", .near, .location(london), distance: 10_000)],
            sort: [QuerySort(key: .field("at"), relativeLocation: london)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(names(try world.db.query(near, in: zone, as: EngineWorld.user)) == ["westminster", "greenwich"])
        }
        let everything = Query(recordType: "Place", sort: [QuerySort(key: .field("at"), ascending: false, relativeLocation: london)])
        #expect(names(try world.db.query(everything, in: zone, as: EngineWorld.user)) == ["paris", "greenwich", "westminster"])
        #expect(Geo.distance(london, Location(latitude: 48.8566, longitude: 2.3522)) > 340_000)
    }

    @Test("ranges over numbers (INT64 and DOUBLE alike) and dates; sort by creation date descending")
    func rangesAndDateSort() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        for index in 0..<6 {
            let value: FieldValue = index % 2 == 0 ? .int64(Int64(index)) : .double(Double(index) + 0.5)
            try await world.save([Record.make("M", "m\(index)", in: zone, ["v": value])])
        }
        func run(_ query: Query) throws -> [String] { names(try world.db.query(query, in: zone, as: EngineWorld.user)) }
        #expect(try run(Query(recordType: "M", filters: [filter("v", .greaterThan, .int64(2))])) == ["m3", "m4", "m5"])
        #expect(try run(Query(recordType: "M", filters: [filter("v", .lessThanOrEquals, .double(3.5))])) == ["m0", "m1", "m2", "m3"])
        #expect(try run(Query(recordType: "M", filters: [filter("v", .greaterThanOrEquals, .double(1.5)), filter("v", .lessThan, .int64(4))])) == ["m1", "m2", "m3"])
        let newestFirst = Query(recordType: "M", sort: [QuerySort(key: .creationDate, ascending: false)])
        #expect(try run(newestFirst) == ["m5", "m4", "m3", "m2", "m1", "m0"])
        // Records saved within one millisecond share a creation date: the answer is
        // exactly the records created strictly after the first one, whichever they are.
        let created = try (0..<6).map { index in
            (name: "m\(index)", date: try #require(try world.fetch(id("m\(index)", in: zone)).creationDate))
        }
        let since = Query(recordType: "M", filters: [filter("creationDate", .greaterThan, .timestamp(created[0].date))])
        let later = created.filter { $0.date > created[0].date }.map(\.name)
        #expect(try run(since) == later)
        // and one millisecond before the first: all of them.
        let before = Timestamp(millisecondsSince1970: created[0].date.millisecondsSince1970 - 1)
        #expect(try run(Query(recordType: "M", filters: [filter("creationDate", .greaterThan, .timestamp(before))])).count == 6)
    }

    @Test("sorting by a field puts records lacking it last, and ties go by record name")
    func sortWithMissingAndTies() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("T", "b", in: zone, ["rank": .int64(2)]), Record.make("T", "a", in: zone, ["rank": .int64(2)]),
            Record.make("T", "c", in: zone, ["rank": .int64(1)]), Record.make("T", "z", in: zone),
            Record.make("T", "y", in: zone, ["rank": .list([.int64(9), .int64(0)])]),
        ])
        func run(_ ascending: Bool, limit: Int) throws -> [String] {
            var result = try world.db.query(Query(recordType: "T", sort: [QuerySort(key: .field("rank"), ascending: ascending)]),
                                             in: zone, resultsLimit: limit, as: EngineWorld.user)
            var all = names(result)
            while let cursor = result.cursor, all.count < 100 {
                result = try world.db.query(continuing: cursor, resultsLimit: limit, as: EngineWorld.user)
                all += names(result)
            }
            return all
        }
        for limit in [1, 2, 10] {
            #expect(try run(true, limit: limit) == ["y", "c", "a", "b", "z"])
            #expect(try run(false, limit: limit) == ["y", "b", "a", "c", "z"])
        }
    }

    /// The order `Docs/DATA-MODEL.md` ("Queries") gives two sort keys, written out independently of the
    /// engine: each key's value (a list's least, or greatest when descending), records
    /// lacking a key after those with it, ties by name in the first key's direction.
    static func expectedOrder(_ records: [(name: String, a: [Int64]?, b: [Int64]?)], _ ascendingA: Bool, _ ascendingB: Bool)
        -> [String]
    {
        func value(_ list: [Int64]?, _ ascending: Bool) -> Int64? {
            guard let list, !list.isEmpty else { return nil }
            return ascending ? list.min() : list.max()
        }
        func before(_ x: Int64?, _ y: Int64?, _ ascending: Bool) -> Bool? {
            switch (x, y) {
            case (nil, nil): return nil
            case (nil, _): return false
            case (_, nil): return true
            case (let x?, let y?): return x == y ? nil : (ascending ? x < y : x > y)
            }
        }
        return records.sorted { l, r in
            if let order = before(value(l.a, ascendingA), value(r.a, ascendingA), ascendingA) { return order }
            if let order = before(value(l.b, ascendingB), value(r.b, ascendingB), ascendingB) { return order }
            return ascendingA ? l.name < r.name : l.name > r.name
        }.map(\.name)
    }

    @Test("two sort keys through the first key's index: every direction, lists, missing values, ties, a filter, pages of 1 to 50")
    func twoSortKeysPageThroughGroups() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var seed: UInt64 = 0x2_50A7
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        var rows: [(name: String, a: [Int64]?, b: [Int64]?, kind: String)] = []
        var records: [Record] = []
        for index in 0..<300 {
            func values(_ distinct: Int) -> [Int64]? {
                switch next(6) {
                case 0: return nil
                case 1: return [Int64(next(distinct)), Int64(next(distinct))]  // a list: sorts by its least or greatest
                default: return [Int64(next(distinct))]  // few values: many ties
                }
            }
            let name = String(format: "r%03d", (index * 7) % 300)
            // Two first-key values: groups of ~100, more than the walk keeps for a page
            // of 1 or 7, so its buffer is cut back while a group is read.
            let a = values(2)
            let b = values(5)
            let kind = next(3) == 0 ? "skip" : "keep"
            rows.append((name, a, b, kind))
            var fields: [String: FieldValue] = ["kind": .string(kind)]
            if let a { fields["a"] = a.count == 1 ? .int64(a[0]) : .list(a.map(FieldValue.int64)) }
            if let b { fields["b"] = b.count == 1 ? .int64(b[0]) : .list(b.map(FieldValue.int64)) }
            records.append(Record.make("T", name, in: zone, fields))
        }
        for start in stride(from: 0, to: records.count, by: 100) {
            try await world.save(Array(records[start..<start + 100]))
        }
        let kept = rows.filter { $0.kind == "keep" }.map { (name: $0.name, a: $0.a, b: $0.b) }
        for ascendingA in [true, false] {
            for ascendingB in [true, false] {
                let expected = Self.expectedOrder(kept, ascendingA, ascendingB)
                let query = Query(
                    recordType: "T", filters: [filter("kind", .equals, .string("keep"))],
                    sort: [QuerySort(key: .field("a"), ascending: ascendingA), QuerySort(key: .field("b"), ascending: ascendingB)])
                // Every page but the last is full, and a cursor never leads to an empty
                // page (a page that ends where the matches end says so): including a
                // limit that divides the number of matches.
                for limit in [1, 7, 50, kept.count / 2, kept.count] {
                    var result = try world.db.query(query, in: zone, resultsLimit: limit, as: EngineWorld.user)
                    if limit == kept.count { #expect(result.cursor == nil, "one exactly full page has no cursor") }
                    var all = names(result)
                    while let cursor = result.cursor, all.count <= kept.count {
                        #expect(result.records.count == limit)
                        result = try world.db.query(continuing: cursor, resultsLimit: limit, as: EngineWorld.user)
                        #expect(!result.records.isEmpty, "an empty page after a cursor, pages of \(limit)")
                        all += names(result)
                    }
                    #expect(all == expected, "a \(ascendingA ? "asc" : "desc"), b \(ascendingB ? "asc" : "desc"), pages of \(limit)")
                }
            }
        }
    }

    @Test("one sort key through its index: scalars and lists mixed, missing values, ties, both directions, pages of 1 to all")
    func oneSortKeyOverScalarsAndLists() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var random = SeededRandom(seed: 0x5_0127)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
        var rows: [(name: String, a: [Int64]?, b: [Int64]?)] = []
        var records: [Record] = []
        for index in 0..<200 {
            let name = String(format: "s%03d", (index * 13) % 200)
            // A scalar's one index entry is taken as its position without reading the
            // value again; a list's record is found once per element and must be
            // taken only at its least (ascending) or greatest (descending).
            let a: [Int64]?
            switch next(5) {
            case 0: a = nil
            case 1: a = [Int64(next(20)), Int64(next(20)), Int64(next(20))]
            default: a = [Int64(next(20))]
            }
            var fields: [String: FieldValue] = [:]
            if let a { fields["a"] = a.count == 1 ? .int64(a[0]) : .list(a.map(FieldValue.int64)) }
            rows.append((name, a, nil))
            records.append(Record.make("T", name, in: zone, fields))
        }
        try await world.save(Array(records[..<100]))
        try await world.save(Array(records[100...]))
        for ascending in [true, false] {
            let expected = Self.expectedOrder(rows, ascending, true)
            let query = Query(recordType: "T", sort: [QuerySort(key: .field("a"), ascending: ascending)])
            for limit in [1, 7, 50, rows.count] {
                let all = try Self.allPages(query, in: zone, of: limit, upTo: rows.count, world)
                #expect(all == expected, "\(ascending ? "ascending" : "descending"), pages of \(limit)")
            }
        }
    }

    @Test("few candidates sorted by one key (read and sorted, not walked), filters settled on stored bytes: same order and pages as the walk's")
    func fewCandidatesSortedFromStoredBytes() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var random = SeededRandom(seed: 0xFE_3C)
        func next(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
        var rows: [(name: String, a: [Int64]?, b: [Int64]?, group: Int64)] = []
        var records: [Record] = []
        for index in 0..<300 {
            let name = String(format: "f%03d", (index * 17) % 300)
            let a: [Int64]?
            switch next(5) {
            case 0: a = nil
            case 1: a = [Int64(next(20)), Int64(next(20))]
            default: a = [Int64(next(20))]
            }
            var fields: [String: FieldValue] = ["g": .int64(Int64(index % 10))]
            if let a { fields["a"] = a.count == 1 ? .int64(a[0]) : .list(a.map(FieldValue.int64)) }
            rows.append((name, a, nil, Int64(index % 10)))
            records.append(Record.make("T", name, in: zone, fields))
        }
        try await world.save(Array(records[..<150]))
        try await world.save(Array(records[150...]))
        let inGroup = QueryFilter(key: .field("g"), comparator: .equals, value: .int64(3))
        let atLeast = QueryFilter(key: .field("a"), comparator: .greaterThanOrEquals, value: .int64(9))
        let notTwelve = QueryFilter(key: .field("a"), comparator: .notEquals, value: .int64(12))
        let cases: [([QueryFilter], ((name: String, a: [Int64]?, b: [Int64]?, group: Int64)) -> Bool)] = [
            ([inGroup], { $0.group == 3 }),
            ([inGroup, atLeast], { $0.group == 3 && ($0.a?.contains { $0 >= 9 } ?? false) }),
            ([inGroup, notTwelve], { $0.group == 3 && !($0.a?.contains(12) ?? false) }),
        ]
        for (filters, keep) in cases {
            let kept = rows.filter(keep).map { ($0.name, $0.a, $0.b) }
            for ascending in [true, false] {
                let expected = Self.expectedOrder(kept, ascending, true)
                let query = Query(recordType: "T", filters: filters, sort: [QuerySort(key: .field("a"), ascending: ascending)])
                for limit in [1, 4, 30] {
                    let all = try Self.allPages(query, in: zone, of: limit, upTo: kept.count, world)
                    #expect(all == expected, "\(filters.count) filters, \(ascending ? "ascending" : "descending"), pages of \(limit)")
                }
            }
        }
    }

    /// The names of every page of `query`, `limit` at a time, following cursors (and
    /// stopping once more than `count` names came back, should a cursor never end).
    static func allPages(_ query: Query, in zone: ZoneID, of limit: Int, upTo count: Int, _ world: EngineWorld) throws
        -> [String]
    {
        var result = try world.db.query(query, in: zone, resultsLimit: limit, as: EngineWorld.user)
        var all = result.records.map(\.recordID.recordName)
        while let cursor = result.cursor, all.count <= count {
            result = try world.db.query(continuing: cursor, resultsLimit: limit, as: EngineWorld.user)
            all += result.records.map(\.recordID.recordName)
        }
        return all
    }

    @Test("paging 1,000 matches 37 at a time while other records change: no duplicates, no skips")
    func pagingUnderChange() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        var batch: [Record] = []
        for index in 0..<1_000 {
            batch.append(Record.make("Item", String(format: "match%04d", index), in: zone, [
                "kind": .string("match"), "rank": .int64(Int64((index * 7919) % 1000)),
            ]))
            if batch.count == 400 || index == 999 {
                try await world.save(batch)
                batch = []
            }
        }
        for sort in [[QuerySort(key: .field("rank"))], [], [QuerySort(key: .modificationDate, ascending: false)],
                     [QuerySort(key: .field("rank"), ascending: false), QuerySort(key: .recordName)]] {
            let query = Query(recordType: "Item", filters: [filter("kind", .equals, .string("match"))], sort: sort)
            var seen: [String] = []
            var result = try world.db.query(query, in: zone, resultsLimit: 37, as: EngineWorld.user)
            var round = 0
            while true {
                #expect(result.records.count <= 37)
                seen += names(result)
                // Between pages: others come and go, including ones that sort anywhere.
                round += 1
                try await world.save([
                    Record.make("Item", "other\(round)", in: zone, ["kind": .string("other"), "rank": .int64(Int64(round % 1000))]),
                    Record.make("Item", "zz-new-match-\(sort.count)-\(round)", in: zone, ["kind": .string("late"), "rank": .int64(5)]),
                ])
                if round > 1 { try await world.delete([id("other\(round - 1)", in: zone)]) }
                guard let cursor = result.cursor else { break }
                if round > 100 {
                    Issue.record("paging does not end (sort \(sort))")
                    break
                }
                result = try world.db.query(continuing: cursor, resultsLimit: 37, as: EngineWorld.user)
            }
            #expect(seen.count == 1_000, "sort \(sort)")
            #expect(Set(seen).count == 1_000, "duplicates with sort \(sort)")
            #expect(round == 28)
        }
    }

    @Test("a damaged or foreign cursor is refused; desiredKeys applies to query results")
    func cursorIntegrity() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save((0..<5).map { Record.make("T", "r\($0)", in: zone, ["a": .int64(1), "b": .int64(2)]) })
        let first = try world.db.query(Query(recordType: "T"), in: zone, resultsLimit: 2, desiredKeys: ["b"], as: EngineWorld.user)
        #expect(first.records.allSatisfy { $0.fields == ["b": .int64(2)] })
        guard let cursor = first.cursor else {
            Issue.record("expected a cursor")
            return
        }
        var bytes = cursor.bytes
        bytes[bytes.count / 2] ^= 1
        #expect(throws: CumulusError.self) { try world.db.query(continuing: QueryCursor(bytes: bytes), as: EngineWorld.user) }
        let other = try EngineWorld("foreignCursor")
        #expect(throws: CumulusError.self) { try other.db.query(continuing: cursor, as: EngineWorld.user) }
        #expect(names(try world.db.query(continuing: cursor, as: EngineWorld.user)) == ["r2", "r3", "r4"])
    }

    @Test("queries see only the zone asked for, and a missing zone is zoneNotFound")
    func zoneScope() async throws {
        let world = try EngineWorld()
        let a = try await world.makeZone("A")
        let b = try await world.makeZone("B")
        try await world.save([Record.make("T", "x", in: a), Record.make("T", "y", in: b)])
        #expect(names(try world.db.query(Query(recordType: "T"), in: a, as: EngineWorld.user)) == ["x"])
        #expect(try world.db.query(Query(recordType: "T"), as: EngineWorld.user).records.count == 2)
        #expect(throws: CumulusError.self) { try world.db.query(Query(recordType: "T"), in: ZoneID(zoneName: "Nope"), as: EngineWorld.user) }
    }
}
