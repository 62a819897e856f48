import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Cascading deletes")
struct CascadeTests {
    @Test("deleting a to-do list deletes every item that owns-references it")
    func deletingListDeletesItems() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let list = Record.make("TodoList", "groceries", in: zone, ["title": .string("Groceries")])
        let items = (0..<25).map {
            Record.make("TodoItem", "item\($0)", in: zone, ["title": .string("thing \($0)"), "list": ref("groceries", in: zone, .deleteSelf)])
        }
        try await world.save([list] + items)
        let result = try await world.delete([list.recordID])
        #expect(result.partialFailure == nil)
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.noneExist([list.recordID] + items.map(\.recordID)))
        }
        // Each cascaded record is its own event naming its owner.
        let deletions = try world.allEvents().compactMap { event -> (RecordID, DeleteCause)? in
            if case .recordDeleted(_, let id, _, let cause) = event { return (id, cause) }
            return nil
        }
        #expect(deletions.count == 26)
        #expect(deletions.first?.1 == .direct)
        #expect(deletions.dropFirst().allSatisfy { $0.1 == .cascade(owner: list.recordID) })
    }

    @Test("cascades follow deleteSelf references inside list fields")
    func cascadeThroughListFields() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Album", "a1", in: zone), Record.make("Album", "a2", in: zone),
            Record.make("Photo", "p", in: zone, ["albums": .list([ref("a1", in: zone), ref("a2", in: zone, .deleteSelf)])]),
        ])
        try await world.delete([id("a2", in: zone)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([id("a1", in: zone), id("p", in: zone)]) == [true, false])
        }
    }

    @Test("artist → artworks: fetch by ID works, and deleting the artist removes the artworks")
    func artistArtworks() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone("Gallery")
        let artist = Record.make("Artist", "monet", in: zone, ["name": .string("Claude Monet")])
        let works = ["waterlilies", "haystacks", "rouen"].map {
            Record.make("Artwork", $0, in: zone, ["title": .string($0), "artist": ref("monet", in: zone, .deleteSelf)])
        }
        try await world.save(works + [artist])  // children first: targets are still written first
        try world.checkLiveAndRebuilt { () throws in
            let fetched = try world.fetch(id("haystacks", in: zone))
            #expect(fetched["artist"] == ref("monet", in: zone, .deleteSelf))
            #expect(try world.fetch(id("monet", in: zone))["name"] == .string("Claude Monet"))
        }
        try await world.delete([artist.recordID])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists(works.map(\.recordID)) == [false, false, false])
        }
    }

    @Test("a record with two deleteSelf owners goes when either owner goes")
    func twoOwners() async throws {
        for deleted in ["ownerA", "ownerB"] {
            let world = try EngineWorld("twoOwners\(deleted)")
            let zone = try await world.makeZone()
            try await world.save([
                Record.make("Owner", "ownerA", in: zone), Record.make("Owner", "ownerB", in: zone),
                Record.make("Shared", "child", in: zone, ["a": ref("ownerA", in: zone, .deleteSelf), "b": ref("ownerB", in: zone, .deleteSelf)]),
            ])
            try await world.delete([id(deleted, in: zone)])
            let survivor = deleted == "ownerA" ? "ownerB" : "ownerA"
            try world.checkLiveAndRebuilt { () throws in
                #expect(try world.exists([id("child", in: zone), id(survivor, in: zone)]) == [false, true])
            }
        }
    }

    @Test("circular owners terminate and both go")
    func circularOwners() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Node", "a", in: zone, ["next": ref("b", in: zone, .deleteSelf)]),
            Record.make("Node", "b", in: zone, ["next": ref("c", in: zone, .deleteSelf)]),
            Record.make("Node", "c", in: zone, ["next": ref("a", in: zone, .deleteSelf)]),
            Record.make("Node", "outside", in: zone),
        ])
        try await world.delete([id("b", in: zone)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists(ids(["a", "b", "c", "outside"], in: zone)) == [false, false, false, true])
        }
    }

    @Test("a three-level tree mixing none and deleteSelf loses only the owned branch")
    func mixedTree() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        try await world.save([
            Record.make("Node", "root", in: zone),
            Record.make("Node", "owned", in: zone, ["up": ref("root", in: zone, .deleteSelf)]),
            Record.make("Node", "linked", in: zone, ["up": ref("root", in: zone, .none)]),
            Record.make("Node", "ownedLeaf", in: zone, ["up": ref("owned", in: zone, .deleteSelf)]),
            Record.make("Node", "linkedLeaf", in: zone, ["up": ref("linked", in: zone, .deleteSelf)]),
            Record.make("Node", "looseLeaf", in: zone, ["up": ref("owned", in: zone, .none)]),
        ])
        try await world.delete([id("root", in: zone)])
        try world.checkLiveAndRebuilt { () throws in
            let names = ["root", "owned", "linked", "ownedLeaf", "linkedLeaf", "looseLeaf"]
            #expect(try world.exists(ids(names, in: zone)) == [false, false, true, false, true, true])
            // The dangling reference stays: action none may point at nothing.
            #expect(try world.fetch(id("looseLeaf", in: zone))["up"] == ref("owned", in: zone))
        }
    }

    @Test("cascades run in the default zone too, immediately")
    func defaultZoneCascade() async throws {
        let world = try EngineWorld()
        let zone = ZoneID.default
        try await world.save([
            Record.make("List", "l", in: zone), Record.make("Item", "i", in: zone, ["l": ref("l", in: zone, .deleteSelf)]),
        ])
        try await world.delete([id("l", in: zone)])
        try world.checkLiveAndRebuilt { () throws in
            #expect(try world.exists([id("i", in: zone)]) == [false])
        }
    }
}
