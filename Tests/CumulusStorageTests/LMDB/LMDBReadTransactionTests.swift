import CumulusTestSupport
import Foundation
import Synchronization
import Testing

@testable import CumulusStorage

@Suite("Read transactions")
struct LMDBReadTransactionTests {
    /// Opens a fresh environment with table "items" holding keys "a"..."j" → "A"..."J".
    func withLetters(_ body: (LMDBEnvironment, LMDBTable) throws -> Void) throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                for letter in "abcdefghij" {
                    try txn.put(table, key: [UInt8](String(letter)), value: [UInt8](letter.uppercased()))
                }
            }
            try body(env, table)
        }
    }

    func collect(
        _ txn: LMDBReadTransaction, _ table: LMDBTable, from: String? = nil, to: String? = nil,
        reverse: Bool = false
    ) throws -> String {
        var keys = ""
        try txn.scan(table, from: from.map { [UInt8]($0) }, to: to.map { [UInt8]($0) }, reverse: reverse) { key, _ in
            keys += String(decoding: key, as: UTF8.self)
            return true
        }
        return keys
    }

    @Test func readersSeeAConsistentSnapshotWhileAWriterCommits() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { try $0.put(table, key: [UInt8]("k"), value: [UInt8]("old")) }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("old"))
                onOtherThread {
                    do {
                        try env.write { txn throws in
                            try txn.put(table, key: [UInt8]("k"), value: [UInt8]("new"))
                            try txn.put(table, key: [UInt8]("added"), value: [UInt8]("x"))
                        }
                    } catch {
                        Issue.record(error)
                    }
                }
                // The write committed while this snapshot stayed open.
                #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("old"))
                #expect(try txn.get(table, key: [UInt8]("added")) == nil)
                #expect(try txn.count(table) == 1)
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("new"))
                #expect(try txn.count(table) == 2)
            }
        }
    }

    @Test func readsRunConcurrentlyFromManyThreads() throws {
        try withLetters { env, table in
            let mismatches = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                for _ in 0..<50 {
                    let value = try? env.read { try $0.get(table, key: [UInt8]("c")) }
                    if value != [UInt8]("C") { mismatches.add(1, ordering: .relaxed) }
                }
            }
            #expect(mismatches.load(ordering: .relaxed) == 0)
        }
    }

    @Test func withValueReadsWithoutCopying() throws {
        try withLetters { env, table in
            try env.read { txn throws in
                let length = try txn.withValue(table, key: [UInt8]("d")) { $0.count }
                #expect(length == 1)
                let firstByte = try txn.withValue(table, key: [UInt8]("d")) { $0.first }
                #expect(firstByte == UInt8(ascii: "D"))
                #expect(try txn.withValue(table, key: [UInt8]("zz")) { $0.count } == nil)
            }
        }
    }

    @Test func forwardRangeScanIsHalfOpen() throws {
        try withLetters { env, table in
            try env.read { txn throws in
                #expect(try collect(txn, table) == "abcdefghij")
                #expect(try collect(txn, table, from: "c", to: "f") == "cde")
                #expect(try collect(txn, table, from: "cc", to: "ff") == "def")
                #expect(try collect(txn, table, from: "h") == "hij")
                #expect(try collect(txn, table, to: "b") == "a")
                #expect(try collect(txn, table, from: "f", to: "c") == "")
                #expect(try collect(txn, table, from: "z") == "")
            }
        }
    }

    @Test func reverseRangeScanVisitsTheSameRangeBackwards() throws {
        try withLetters { env, table in
            try env.read { txn throws in
                #expect(try collect(txn, table, reverse: true) == "jihgfedcba")
                #expect(try collect(txn, table, from: "c", to: "f", reverse: true) == "edc")
                #expect(try collect(txn, table, from: "cc", to: "ff", reverse: true) == "fed")
                #expect(try collect(txn, table, to: "zz", reverse: true) == "jihgfedcba")
                #expect(try collect(txn, table, from: "i", reverse: true) == "ji")
                #expect(try collect(txn, table, to: "a", reverse: true) == "")
            }
        }
    }

    @Test func scanStopsWhenTheBodyReturnsFalse() throws {
        try withLetters { env, table in
            try env.read { txn throws in
                var visited = 0
                try txn.scan(table) { _, _ in
                    visited += 1
                    return visited < 3
                }
                #expect(visited == 3)
            }
        }
    }

    @Test func prefixScanFindsExactlyTheKeysWithThatPrefix() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            let stored: [[UInt8]] = [[1], [1, 0], [1, 0xFF], [1, 0xFF, 0xFF], [2], [2, 0], [0xFF], [0xFF, 1]]
            try env.write { txn throws in
                for key in stored { try txn.put(table, key: key, value: key) }
            }
            func keys(prefix: [UInt8], reverse: Bool = false) throws -> [[UInt8]] {
                var found: [[UInt8]] = []
                try env.read { txn throws in
                    try txn.scan(table, prefix: prefix, reverse: reverse) { key, value in
                        #expect(key.elementsEqual(value))
                        found.append([UInt8](key))
                        return true
                    }
                }
                return found
            }
            #expect(try keys(prefix: [1]) == [[1], [1, 0], [1, 0xFF], [1, 0xFF, 0xFF]])
            #expect(try keys(prefix: [1], reverse: true) == [[1, 0xFF, 0xFF], [1, 0xFF], [1, 0], [1]])
            #expect(try keys(prefix: [1, 0xFF]) == [[1, 0xFF], [1, 0xFF, 0xFF]])
            #expect(try keys(prefix: [0xFF]) == [[0xFF], [0xFF, 1]])
            #expect(try keys(prefix: [0xFF], reverse: true) == [[0xFF, 1], [0xFF]])
            #expect(try keys(prefix: [3]) == [])
            #expect(try keys(prefix: []).count == stored.count)
        }
    }

    @Test func pairLookupFindsOneValueAmongAKeysDuplicates() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index", options: .dupSort)
            let plain = try env.table("plain")
            try env.write { txn throws in
                for value in ["1", "20", "3", "31"] { try txn.put(table, key: [UInt8]("b"), value: [UInt8](value)) }
                try txn.put(table, key: [UInt8]("a"), value: [UInt8]("2"))
                try txn.put(plain, key: [UInt8]("k"), value: [UInt8]("v"))
            }
            try env.read { txn throws in
                for value in ["1", "20", "3", "31"] {
                    #expect(try txn.contains(table, key: [UInt8]("b"), value: [UInt8](value)), "b/\(value)")
                }
                // Prefixes and extensions of stored values, another key's value, no key.
                for (key, value) in [("b", "2"), ("b", "310"), ("b", "0"), ("b", "4"), ("a", "1"), ("c", "1")] {
                    #expect(try !txn.contains(table, key: [UInt8](key), value: [UInt8](value)), "\(key)/\(value)")
                }
                #expect(try txn.contains(plain, key: [UInt8]("k"), value: [UInt8]("v")))
                #expect(try !txn.contains(plain, key: [UInt8]("k"), value: [UInt8]("w")))
            }
        }
    }

    @Test func dupSortScansVisitEveryValueInBothDirections() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index", options: .dupSort)
            try env.write { txn throws in
                for (key, value) in [("a", "1"), ("a", "2"), ("b", "1"), ("b", "2"), ("b", "3"), ("c", "1")] {
                    try txn.put(table, key: [UInt8](key), value: [UInt8](value))
                }
            }
            func pairs(from: String? = nil, to: String? = nil, reverse: Bool) throws -> [String] {
                var found: [String] = []
                try env.read { txn throws in
                    try txn.scan(table, from: from.map { [UInt8]($0) }, to: to.map { [UInt8]($0) }, reverse: reverse) { key, value in
                        found.append(String(decoding: key, as: UTF8.self) + String(decoding: value, as: UTF8.self))
                        return true
                    }
                }
                return found
            }
            #expect(try pairs(reverse: false) == ["a1", "a2", "b1", "b2", "b3", "c1"])
            #expect(try pairs(reverse: true) == ["c1", "b3", "b2", "b1", "a2", "a1"])
            #expect(try pairs(from: "b", to: "c", reverse: true) == ["b3", "b2", "b1"])
            #expect(try pairs(from: "b", to: "c", reverse: false) == ["b1", "b2", "b3"])
            let last = try env.read { try $0.last(table) }
            #expect(last?.key == [UInt8]("c") && last?.value == [UInt8]("1"))
        }
    }

    @Test func firstAndLastFindTheExtremesOrNothing() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let log = try env.table("log")
            try env.read { txn throws in
                #expect(try txn.first(log) == nil)
                #expect(try txn.last(log) == nil)
            }
            try env.write { txn throws in
                for sequence: UInt64 in [3, 256, 1, 70_000, 2] {
                    try txn.put(log, key: BigEndian.bytes(sequence), value: [UInt8]("e\(sequence)"))
                }
            }
            try env.read { txn throws in
                let first = try #require(try txn.first(log))
                let last = try #require(try txn.last(log))
                #expect(BigEndian.decode(UInt64.self, from: first.key) == 1)
                #expect(BigEndian.decode(UInt64.self, from: last.key) == 70_000)
                #expect(last.value == [UInt8]("e70000"))
            }
        }
    }

    @Test func bodyErrorsPropagateUnchangedFromRead() throws {
        struct Marker: Error, Equatable {}
        try withLetters { env, table in
            #expect(throws: Marker()) {
                try env.read { _ in throw Marker() }
            }
            #expect(throws: Marker()) {
                try env.read { txn throws in try txn.scan(table) { _, _ in throw Marker() } }
            }
            let count = try env.read { try $0.count(table) }
            #expect(count == 10)
        }
    }
}
