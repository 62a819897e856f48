import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusStorage

/// Deferred writes must be indistinguishable from the same puts and deletes done at
/// once: same final table, visible to every later use in the transaction, gone with
/// an aborted one.
@Suite("Deferred writes")
struct DeferredWritesTests {
    /// A random run of operations over a small key space, so keys repeat, are put
    /// twice, deleted before they exist and put again after a delete; keys of
    /// several lengths share prefixes, which exercises the shorter-first order.
    static func operations(seed: UInt64, count: Int, prefix: [UInt8] = [], tail: ClosedRange<Int> = 1...3)
        -> [(key: [UInt8], isPut: Bool)]
    {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            let length = Int.random(in: tail, using: &generator)
            let key = prefix + (0..<length).map { _ in UInt8.random(in: 0...2, using: &generator) }
            return (key, Bool.random(using: &generator))
        }
    }

    /// Does each operation at once on `immediate` and deferred on `deferred`.
    static func apply(
        _ operations: [(key: [UInt8], isPut: Bool)], immediately immediate: LMDBTable, deferred: LMDBTable,
        _ txn: LMDBWriteTransaction
    ) throws {
        for (key, isPut) in operations {
            if isPut {
                try txn.put(immediate, key: key, value: [UInt8]())
                try txn.deferPut(deferred, key: key)
            } else {
                _ = try txn.delete(immediate, key: key)
                try txn.deferDelete(deferred, key: key)
            }
        }
    }

    static func contents(_ table: LMDBTable, _ txn: LMDBReadTransaction) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try txn.scan(table) { key, _ in
            keys.append(Array(key))
            return true
        }
        return keys
    }

    /// Keys like index keys: a long shared prefix, then tails of 0 to 24 bytes, mostly
    /// zeros, so the two eight-byte heads the sort compares first tie, pad and end
    /// early, and the compare past them decides some orders.
    @Test func sharedPrefixesAndZeroBytesSortAsLMDBDoes() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            let prefix = [UInt8](repeating: 0xAB, count: 24)
            for round in 0..<10 {
                let operations = Self.operations(seed: 500 + UInt64(round), count: 400, prefix: prefix, tail: 0...24)
                try env.write { txn throws in
                    // Empty tables every round: the deferred writes then take the
                    // `MDB_APPEND` path, where LMDB refuses a key out of order, so a
                    // wrong sort fails here and not only when it changes the contents.
                    try txn.clear(immediate)
                    try txn.clear(deferred)
                    try Self.apply(operations, immediately: immediate, deferred: deferred, txn)
                }
                let (expected, found) = try env.read { txn throws in
                    (try Self.contents(immediate, txn), try Self.contents(deferred, txn))
                }
                #expect(found == expected, "round \(round)")
            }
        }
    }

    @Test(arguments: [false, true])
    func sameOutcomeAsImmediateWrites(startsFilled: Bool) throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            for round in 0..<20 {
                let operations = Self.operations(seed: UInt64(round), count: 300)
                try env.write { txn throws in
                    if startsFilled || round > 0 {
                        // Not empty: the cursor path. An empty start takes the append path.
                        for key in Self.operations(seed: 1_000 + UInt64(round), count: 20).map(\.key) {
                            try txn.put(immediate, key: key, value: [UInt8]())
                            try txn.put(deferred, key: key, value: [UInt8]())
                        }
                    }
                    try Self.apply(operations, immediately: immediate, deferred: deferred, txn)
                }
                let (expected, found) = try env.read { txn throws in
                    (try Self.contents(immediate, txn), try Self.contents(deferred, txn))
                }
                #expect(found == expected, "round \(round)")
                let allEmpty = try env.read { txn throws -> Bool in
                    var empty = true
                    try txn.scan(deferred) { _, value in
                        empty = empty && value.isEmpty
                        return true
                    }
                    return empty
                }
                #expect(allEmpty)
                #expect(!expected.isEmpty)
            }
        }
    }

    @Test(arguments: [false, true])
    func valuesTravelWithTheirKeysAndTheLastPutWins(startsFilled: Bool) throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            for round in 0..<20 {
                var generator = SeededGenerator(seed: 7_000 + UInt64(round))
                try env.write { txn throws in
                    if startsFilled || round > 0 {
                        for key in Self.operations(seed: 2_000 + UInt64(round), count: 20).map(\.key) {
                            try txn.put(immediate, key: key, value: [9])
                            try txn.put(deferred, key: key, value: [9])
                        }
                    }
                    for (key, isPut) in Self.operations(seed: 3_000 + UInt64(round), count: 300) {
                        // Values of 0 to 40 bytes, empty ones among them: a put of an
                        // empty value replaces a value as any other put does.
                        let value = (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                            UInt8.random(in: 0...255, using: &generator)
                        }
                        if isPut {
                            try txn.put(immediate, key: key, value: value)
                            try txn.deferPut(deferred, key: key, value: value)
                        } else {
                            _ = try txn.delete(immediate, key: key)
                            try txn.deferDelete(deferred, key: key)
                        }
                    }
                }
                func entries(_ table: LMDBTable) throws -> [[UInt8]] {
                    try env.read { txn throws in
                        var all: [[UInt8]] = []
                        try txn.scan(table) { key, value in
                            all.append(Array(key) + [0xFF] + Array(value))
                            return true
                        }
                        return all
                    }
                }
                let expected = try entries(immediate)
                #expect(try entries(deferred) == expected, "round \(round)")
                #expect(!expected.isEmpty)
            }
        }
    }

    @Test func aTableOfPostingsTakesNoValues() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let postings = try env.table("postings", postings: PostingLayout(groupStart: 2))
            try env.write { txn throws in
                #expect(throws: StorageError.self) {
                    try txn.deferPut(postings, key: [1, 1, 7, 0, 0, 5], value: [1])
                }
            }
        }
    }

    @Test func readsInTheTransactionSeeWhatIsHeldBack() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index")
            let other = try env.table("other")
            try env.write { txn throws in
                try txn.put(table, key: [UInt8]("old"), value: [UInt8]())
                try txn.deferPut(table, key: [UInt8]("b"))
                try txn.deferPut(table, key: [UInt8]("a"))
                try txn.deferDelete(table, key: [UInt8]("old"))
                // Each kind of use writes what is pending first.
                #expect(try txn.contains(table, key: [UInt8]("a")))
                #expect(try txn.contains(table, key: [UInt8]("old")) == false)
                try txn.deferDelete(table, key: [UInt8]("a"))
                #expect(try txn.count(table) == 1)
                try txn.deferPut(table, key: [UInt8]("c"))
                #expect(try Self.contents(table, txn) == [[UInt8]("b"), [UInt8]("c")])
                try txn.deferPut(table, key: [UInt8]("d"))
                let last = try txn.withCursor(table) { try $0.last().map { Array($0.key) } }
                #expect(last == [UInt8]("d"))
                // A put of a value (not deferred) after deferred deletes of the same key.
                try txn.deferDelete(table, key: [UInt8]("e"))
                try txn.put(table, key: [UInt8]("e"), value: [UInt8]("v"))
                #expect(try txn.get(table, key: [UInt8]("e")) == [UInt8]("v"))
                // Another table's use leaves this one's pending writes alone until commit.
                try txn.deferPut(table, key: [UInt8]("f"))
                try txn.put(other, key: [UInt8]("x"), value: [UInt8]())
            }
            try env.read { txn throws in
                #expect(try Self.contents(table, txn).map { String(decoding: $0, as: UTF8.self) } == ["b", "c", "d", "e", "f"])
            }
        }
    }

    /// Writes held back for three tables at once, interleaved, with the first table's
    /// written in the middle by a read of it (which moves the others' buffers down a
    /// place): every key still reaches its own table, as immediate writes would.
    @Test(arguments: [UInt64(5), 6, 7])
    func interleavedTablesKeepTheirOwnKeysWhenOneIsWrittenEarly(seed: UInt64) throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let names = ["a", "b", "c"]
            let deferred = try names.map { try env.table("deferred-\($0)") }
            let immediate = try names.map { try env.table("immediate-\($0)") }
            let operations = Self.operations(seed: seed, count: 600, tail: 1...4)
            try env.write { txn throws in
                for (index, (key, isPut)) in operations.enumerated() {
                    // Runs of a few keys per table, then another table.
                    let table = (index / 3 + index % 2) % names.count
                    if isPut {
                        try txn.put(immediate[table], key: key, value: [UInt8]())
                        try txn.deferPut(deferred[table], key: key)
                    } else {
                        _ = try txn.delete(immediate[table], key: key)
                        try txn.deferDelete(deferred[table], key: key)
                    }
                    if index % 97 == 50 {
                        // Table 0's writes go now; the next key goes to the table just
                        // written to, which is found again after the move.
                        #expect(try txn.count(deferred[0]) == txn.count(immediate[0]))
                        let extra = key + [9]
                        try txn.put(immediate[table], key: extra, value: [UInt8]())
                        try txn.deferPut(deferred[table], key: extra)
                    }
                }
            }
            try env.read { txn throws in
                for table in names.indices {
                    #expect(try Self.contents(deferred[table], txn) == Self.contents(immediate[table], txn))
                }
            }
        }
    }

    @Test func anAbortedTransactionWritesNothing() throws {
        struct Stop: Error {}
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index")
            #expect(throws: Stop.self) {
                try env.write { txn throws in
                    try txn.deferPut(table, key: [UInt8]("a"))
                    throw Stop()
                }
            }
            try env.read { txn throws in #expect(try txn.count(table) == 0) }
        }
    }

    @Test func badKeysAreRefusedWhenDeferredAndLeaveTheTransactionUsable() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index")
            let duplicates = try env.table("dups", options: .dupSort)
            try env.write { txn throws in
                #expect(throws: StorageError.self) { try txn.deferPut(table, key: [UInt8]()) }
                #expect(throws: StorageError.self) {
                    try txn.deferPut(table, key: [UInt8](repeating: 1, count: env.maxKeySize + 1))
                }
                #expect(throws: StorageError.self) { try txn.deferPut(duplicates, key: [UInt8]("k")) }
                try txn.deferPut(table, key: [UInt8]("ok"))
            }
            try env.read { txn throws in #expect(try Self.contents(table, txn) == [[UInt8]("ok")]) }
        }
    }

    @Test func aFullBufferIsWrittenEarlyWithTheSameOutcome() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            let operations = Self.operations(seed: 99, count: 2_000)
            try env.write { txn throws in
                txn.deferredFlushThreshold = 64
                for operation in operations {
                    try Self.apply([operation], immediately: immediate, deferred: deferred, txn)
                    // Written early and often: never more than the threshold held back.
                    #expect((txn.deferred.pending.first?.bytes.count ?? 0) < 64)
                }
            }
            try env.read { txn throws in
                #expect(try Self.contents(deferred, txn) == (try Self.contents(immediate, txn)))
            }
        }
    }

    /// Past ``DeferredWrites/growthJumpBytes`` a buffer is sized for its flush
    /// threshold at once, and filling it, flushing it early and filling it again
    /// ends as the same operations done at once.
    @Test func aLargeBufferIsSizedOnceAndWritesTheSameOutcome() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            let threshold = 3 * DeferredWrites.growthJumpBytes
            var generator = SeededGenerator(seed: 7)
            // ~64-byte keys over a space small enough that some repeat and some
            // deletes find their key: about 4.5 MiB in all, so one early flush.
            let operations = (0..<70_000).map { _ in
                (key: [UInt8](repeating: 1, count: 48) + BigEndian.bytes(UInt64.random(in: 0..<40_000, using: &generator))
                    + [UInt8](repeating: 0, count: 8),
                 isPut: Int.random(in: 0..<4, using: &generator) != 0)
            }
            try env.write { txn throws in
                txn.deferredFlushThreshold = threshold
                var capacities = Set<Int>()
                for operation in operations {
                    try Self.apply([operation], immediately: immediate, deferred: deferred, txn)
                    // Past twice the jump size the buffer has grown once after passing it.
                    if let buffer = txn.deferred.pending.first?.bytes, buffer.count > 2 * DeferredWrites.growthJumpBytes {
                        #expect(buffer.capacity >= threshold)
                        capacities.insert(buffer.capacity)
                    }
                }
                // Sized once, and the same buffer refilled after the early write.
                #expect(capacities.count == 1, "\(capacities)")
            }
            try env.read { txn throws in
                #expect(try Self.contents(deferred, txn) == (try Self.contents(immediate, txn)))
            }
        }
    }

    @Test func growingTheMapReplaysTheBodyWithNothingLeftOver() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.mapSize = 1 << 20
            let env = try LMDBEnvironment(path: path, options: options)
            let table = try env.table("index")
            var runs = 0
            // ~4 MiB of keys into a 1 MiB map: the commit's write of the held-back keys
            // fills the map, the body runs again in a fresh transaction.
            try env.write { txn throws in
                runs += 1
                for index in 0..<20_000 {
                    try txn.deferPut(table, key: BigEndian.bytes(UInt64(index)) + [UInt8](repeating: 7, count: 200))
                }
            }
            #expect(runs >= 2)
            try env.read { txn throws in #expect(try txn.count(table) == 20_000) }
        }
    }

    /// Deletes of neighbouring keys take the entry the cursor rests on after a delete;
    /// runs of neighbours, gaps, absent keys, puts between deletes, a page's last entry
    /// and the table's last must all end as immediate deletes do.
    @Test func runsOfNeighbouringDeletesEndAsImmediateDeletes() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            func key(_ index: Int, _ tail: UInt8 = 0) -> [UInt8] {
                [UInt8](repeating: 0x42, count: 24) + BigEndian.bytes(UInt64(index)) + [tail]
            }
            // Enough entries for hundreds of pages, so runs cross page boundaries.
            try env.write { txn throws in
                for index in 0..<6_000 {
                    try txn.put(immediate, key: key(index), value: [UInt8]())
                    try txn.put(deferred, key: key(index), value: [UInt8]())
                }
            }
            var operations: [(key: [UInt8], isPut: Bool)] = []
            for index in 100..<2_500 { operations.append((key(index), false)) }  // one long run
            for index in stride(from: 2_500, to: 3_500, by: 3) { operations.append((key(index), false)) }  // gaps
            for index in 3_500..<3_600 {
                operations.append((key(index, 1), false))  // absent, between present keys
                operations.append((key(index), false))
                if index % 10 == 0 { operations.append((key(index, 2), true)) }  // a put inside the run
            }
            for index in 5_990..<6_010 { operations.append((key(index), false)) }  // the table's end, then absent
            operations.append((key(0), false))  // the table's first
            // Written in one unordered batch: the sort puts the runs back together.
            var generator = SeededGenerator(seed: 77)
            operations.shuffle(using: &generator)
            try env.write { txn throws in try Self.apply(operations, immediately: immediate, deferred: deferred, txn) }
            try env.read { txn throws in
                let expected = try Self.contents(immediate, txn)
                #expect(try Self.contents(deferred, txn) == expected)
                #expect(expected.count == 6_000 - 2_400 - 334 - 100 + 10 - 10 - 1)
            }
        }
    }

    /// The environment hands a transaction's emptied buffers to the next one: what an
    /// aborted transaction held back is gone, later transactions write only their own
    /// operations, and buffers past the retained size are let go.
    @Test func buffersPassToTheNextTransactionWithNothingLeftPending() throws {
        struct Stop: Error {}
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let immediate = try env.table("immediate")
            let deferred = try env.table("deferred")
            for round in 0..<12 {
                let operations = Self.operations(seed: 900 + UInt64(round), count: 300)
                if round % 3 == 1 {
                    // Held back, then aborted: none of it may reach a later transaction.
                    #expect(throws: Stop.self) {
                        try env.write { txn throws in
                            try Self.apply(operations, immediately: immediate, deferred: deferred, txn)
                            throw Stop()
                        }
                    }
                    continue
                }
                try env.write { txn throws in
                    if round > 0 {
                        // Reused, and empty before this transaction defers anything.
                        #expect(txn.deferred.hasSpareBuffers, "round \(round)")
                        #expect(txn.deferred.isEmpty, "round \(round)")
                    }
                    try Self.apply(operations, immediately: immediate, deferred: deferred, txn)
                }
                try env.read { txn throws in
                    #expect(try Self.contents(deferred, txn) == (try Self.contents(immediate, txn)), "round \(round)")
                }
            }
            // One table's buffer past the retained size is not kept.
            try env.write { txn throws in
                let tail = [UInt8](repeating: 9, count: 400)
                for index in 0..<(DeferredWrites.retainedCapacity / 400 + 100) {
                    try txn.deferPut(deferred, key: BigEndian.bytes(UInt64(index)) + tail)
                }
            }
            try env.write { txn throws in #expect(!txn.deferred.hasSpareBuffers) }
        }
    }
}
