import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusStorage

/// A table of posting blocks must hold exactly the postings its deferred puts and
/// deletes leave, in key order, however the writes were batched, with every block
/// well formed: non-empty, within its target size, keyed by its first posting.
@Suite("Posting blocks")
struct PostingMergerTests {
    static let layout = PostingLayout(groupStart: 4)

    /// A group: four fixed bytes (zeros among them, which the terminator search must
    /// skip), an escaped word, then the terminator.
    static func group(_ word: Int) -> [UInt8] {
        [0, 0, 0, UInt8(word % 3)] + Array("w\(word)".utf8) + (word % 2 == 0 ? [0, 0xFF] : []) + [0, 0]
    }

    /// A posting: eight big-endian "creation" bytes, then a name.
    static func posting(_ created: UInt64, _ name: String) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: created >> (8 * (7 - $0))) } + Array(name.utf8)
    }

    /// Every logical key of `table`, checking each block on the way.
    static func postings(_ table: LMDBTable, _ txn: LMDBReadTransaction) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try txn.scanLogicalKeys(table) { key in
            keys.append(Array(key))
            return true
        }
        try txn.scan(table) { key, block in
            #expect(!block.isEmpty)
            #expect(block.count <= PostingBlock.targetBytes, "a block of \(block.count) bytes")
            #expect(Self.layout.groupLength(key) != nil)
            return true
        }
        return keys
    }

    @Test func groupEndsAtTheFirstTerminatorPastTheFixedBytes() {
        func length(_ bytes: [UInt8]) -> Int? { bytes.withUnsafeBytes { Self.layout.groupLength($0) } }
        #expect(length([0, 0, 0, 0, 7, 0, 0, 9]) == 7)
        #expect(length([0, 0, 0, 0, 0, 0xFF, 0, 0, 9, 0, 0]) == 8)
        #expect(length([1, 2, 3, 4, 7, 0, 0]) == nil)  // no posting after the group
        #expect(length([1, 2, 3, 4, 7, 0, 0xFF]) == nil)
        #expect(length([0, 0, 0]) == nil)
    }

    /// Random puts and deletes over a few words, most postings appended in creation
    /// order as saves make them, some inserted before, some deleted (first postings
    /// among them), applied in transactions of random size with a flush threshold
    /// that is sometimes tiny: the table always equals the model.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func matchesAModelOfItsPostings(seed: UInt64) throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("postings", postings: Self.layout)
            var generator = SeededGenerator(seed: seed)
            var model = Set<[UInt8]>()
            var words: [Int: Set<[UInt8]>] = [:]
            var clock: UInt64 = 1_000
            for round in 0..<40 {
                let count = Int.random(in: 1...400, using: &generator)
                try env.write { txn in
                    if round % 3 == 1 { txn.deferredFlushThreshold = 256 }
                    for _ in 0..<count {
                        let word = Int.random(in: 0..<5, using: &generator)
                        let roll = Int.random(in: 0..<10, using: &generator)
                        let key: [UInt8]
                        let isPut: Bool
                        if roll < 5 {
                            clock += 1
                            key = Self.group(word) + Self.posting(clock, "r\(clock)")
                            isPut = true
                        } else if roll < 7 {
                            let created = UInt64.random(in: 900...clock, using: &generator)
                            key = Self.group(word) + Self.posting(created, "r\(created)")
                            isPut = true
                        } else {
                            let present = words[word, default: []]
                            let victim =
                                roll == 9
                                ? present.min { $0.lexicographicallyPrecedes($1) } : present.randomElement(using: &generator)
                            if let victim {
                                key = victim
                            } else {
                                key = Self.group(word) + Self.posting(5, "absent")
                            }
                            isPut = false
                        }
                        if isPut { try txn.deferPut(table, key: key) } else { try txn.deferDelete(table, key: key) }
                        if isPut {
                            model.insert(key)
                            words[word, default: []].insert(key)
                        } else {
                            model.remove(key)
                            words[word]?.remove(key)
                        }
                    }
                    // Occasionally a whole word goes, as a cascade takes every record of one.
                    if round % 7 == 6 {
                        let word = Int.random(in: 0..<5, using: &generator)
                        for key in words[word, default: []] {
                            try txn.deferDelete(table, key: key)
                            model.remove(key)
                        }
                        words[word] = []
                    }
                }
                let stored = try env.read { try Self.postings(table, $0) }
                #expect(stored == model.sorted { $0.lexicographicallyPrecedes($1) }, "round \(round)")
            }
            let blocks = try env.read { try $0.count(table) }
            #expect(blocks < model.count / 10, "\(model.count) postings in \(blocks) blocks")
        }
    }

    /// One word's postings reach the scan of that word only, in order, however many
    /// blocks they fill, and a scan stops when told to.
    @Test func scanOfAGroupYieldsItsPostingsInOrder() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("postings", postings: Self.layout)
            let expected = (0..<500).map { Self.posting(UInt64($0), "name-\($0)") }
            try env.write { txn in
                for posting in expected.reversed() { try txn.deferPut(table, key: Self.group(2) + posting) }
                try txn.deferPut(table, key: Self.group(3) + Self.posting(1, "other"))
                try txn.deferPut(table, key: Self.group(1) + Self.posting(1, "other"))
            }
            try env.read { txn in
                var seen: [[UInt8]] = []
                try txn.scanPostings(table, group: Self.group(2)) {
                    seen.append(Array($0))
                    return true
                }
                #expect(seen == expected)
                #expect(try txn.count(table) > 1)
                var first: [[UInt8]] = []
                try txn.scanPostings(table, group: Self.group(2)) {
                    first.append(Array($0))
                    return first.count < 3
                }
                #expect(first == Array(expected.prefix(3)))
            }
        }
    }

    /// A logical scan from a key inside a block begins at that key's posting.
    @Test func logicalScanBeginsAtTheKeyAskedFor() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("postings", postings: Self.layout)
            let keys = (0..<300).map { Self.group(4) + Self.posting(UInt64($0), "r\($0)") }
            try env.write { txn in
                for key in keys { try txn.deferPut(table, key: key) }
            }
            for (index, start) in [(0, keys[0]), (157, keys[157]), (158, keys[157] + [0]), (300, keys[299] + [1])] {
                var seen: [[UInt8]] = []
                try env.read { txn in
                    try txn.scanLogicalKeys(table, from: start) {
                        seen.append(Array($0))
                        return true
                    }
                }
                #expect(seen == Array(keys[index...]), "from \(index)")
            }
        }
    }

    @Test func aKeyWithoutAGroupIsRefused() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("postings", postings: Self.layout)
            try env.write { txn in
                #expect(throws: StorageError.self) { try txn.deferPut(table, key: [1, 2, 3, 4, 5, 6]) }
                #expect(throws: StorageError.self) { try txn.deferDelete(table, key: Self.group(1)) }
            }
            #expect(throws: StorageError.self) { _ = try env.table("dups", options: .dupSort, postings: Self.layout) }
            #expect(throws: StorageError.self) { _ = try env.table("postings") }
        }
    }

    /// A damaged block is reported, by readers and by the next write that merges into
    /// it, and nothing is written over it.
    @Test func aMalformedBlockIsCorruptNotMisread() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("postings", postings: Self.layout)
            let key = Self.group(1) + Self.posting(1, "a")
            for damaged: [UInt8] in [[], [0x05, 0x01, 0x41], [0x00, 0x7F], [0x00, 0x02, 0x41, 0x42]] {
                try env.write { try $0.put(table, key: key, value: damaged) }
                #expect(throws: StorageError.self) {
                    try env.read { txn in try txn.scanPostings(table, group: Self.group(1)) { _ in true } }
                }
                #expect(throws: StorageError.self) { try env.read { try Self.postings(table, $0) } }
                #expect(throws: StorageError.self) {
                    try env.write { try $0.deferPut(table, key: Self.group(1) + Self.posting(2, "b")) }
                }
                #expect(try env.read { try $0.get(table, key: key) } == damaged)
            }
        }
    }

    @Test func frontCodingRoundTrips() throws {
        let postings = [Self.posting(1, "alpha"), Self.posting(1, "alphabet"), Self.posting(2, "b"), Self.posting(300, "")]
        var block: [UInt8] = []
        var previous: [UInt8]?
        for posting in postings {
            posting.withUnsafeBytes { current in
                if let previous {
                    previous.withUnsafeBytes { PostingBlock.append(current, after: $0, to: &block) }
                } else {
                    PostingBlock.append(current, after: nil, to: &block)
                }
            }
            previous = posting
        }
        #expect(block.count < postings.map(\.count).reduce(0, +))
        var decoded: [[UInt8]] = []
        try block.withUnsafeBytes { bytes in
            try postings[0].withUnsafeBytes { key in
            try PostingBlock.forEach(bytes, key: key, groupLength: 0) {
                decoded.append(Array($0))
                return true
            }
            }
        }
        #expect(decoded == postings)
    }
}
