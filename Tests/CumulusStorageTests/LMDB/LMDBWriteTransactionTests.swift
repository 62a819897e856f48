import CLMDB
import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusStorage

@Suite("Write transactions")
struct LMDBWriteTransactionTests {
    @Test func putGetAndDeleteRoundTrip() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                try txn.put(table, key: [UInt8]("a"), value: [UInt8]("one"))
                try txn.put(table, key: [UInt8]("b"), value: [UInt8]("two"))
                try txn.put(table, key: [UInt8]("a"), value: [UInt8]("uno"))
                #expect(try txn.get(table, key: [UInt8]("a")) == [UInt8]("uno"))
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8]("a")) == [UInt8]("uno"))
                #expect(try txn.get(table, key: [UInt8]("b")) == [UInt8]("two"))
                #expect(try txn.get(table, key: [UInt8]("c")) == nil)
                #expect(try txn.count(table) == 2)
            }
            let deleted = try env.write { txn throws in
                (try txn.delete(table, key: [UInt8]("a")), try txn.delete(table, key: [UInt8]("zzz")))
            }
            #expect(deleted == (true, false))
            try env.read { txn throws in
                #expect(try txn.contains(table, key: [UInt8]("a")) == false)
                #expect(try txn.count(table) == 1)
            }
        }
    }

    @Test func emptyValuesAreStored() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { try $0.put(table, key: [UInt8]("k"), value: [UInt8]()) }
            try env.read { txn throws in #expect(try txn.get(table, key: [UInt8]("k")) == []) }
        }
    }

    struct Boom: Error, Equatable {}

    @Test func throwingBodyAbortsAndPropagatesItsError() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { try $0.put(table, key: [UInt8]("kept"), value: [UInt8]("1")) }
            #expect(throws: Boom()) {
                try env.write { txn throws in
                    try txn.put(table, key: [UInt8]("lost"), value: [UInt8]("2"))
                    try txn.delete(table, key: [UInt8]("kept"))
                    throw Boom()
                }
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8]("lost")) == nil)
                #expect(try txn.get(table, key: [UInt8]("kept")) == [UInt8]("1"))
            }
        }
    }

    @Test func keysMustBeNonEmptyAndAtMostMaxKeySize() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            #expect(env.maxKeySize == 511)
            let table = try env.table("items")
            try env.write { txn throws in
                #expect(throws: StorageError.emptyKey) {
                    try txn.put(table, key: [UInt8](), value: [UInt8]("v"))
                }
                #expect(throws: StorageError.keyTooLarge(512)) {
                    try txn.put(table, key: [UInt8](repeating: 1, count: 512), value: [UInt8]("v"))
                }
                #expect(throws: StorageError.keyTooLarge(600)) {
                    try txn.get(table, key: [UInt8](repeating: 1, count: 600))
                }
                #expect(throws: StorageError.emptyKey) { try txn.delete(table, key: [UInt8]()) }
                // Checked before LMDB is called, so the transaction is still usable.
                try txn.put(table, key: [UInt8](repeating: 1, count: 511), value: [UInt8]("max"))
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8](repeating: 1, count: 511)) == [UInt8]("max"))
            }
        }
    }

    @Test func noOverwriteRefusesWithoutPoisoningTheTransaction() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                #expect(try txn.put(table, key: [UInt8]("k"), value: [UInt8]("first"), flags: .noOverwrite))
                #expect(try txn.put(table, key: [UInt8]("k"), value: [UInt8]("second"), flags: .noOverwrite) == false)
                try txn.put(table, key: [UInt8]("other"), value: [UInt8]("fine"))
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("first"))
                #expect(try txn.get(table, key: [UInt8]("other")) == [UInt8]("fine"))
            }
        }
    }

    @Test func appendAcceptsAscendingKeysAndRejectsOutOfOrderOnes() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let log = try env.table("log")
            try env.write { txn throws in
                for sequence in UInt64(1)...1000 {
                    try txn.put(log, key: BigEndian.bytes(sequence), value: BigEndian.bytes(sequence * 2), flags: .append)
                }
            }
            let error = #expect(throws: StorageError.self) {
                try env.write { txn throws in
                    try txn.put(log, key: BigEndian.bytes(UInt64(5)), value: [UInt8]("late"), flags: .append)
                }
            }
            #expect(error?.isKeyExists == true)
            // With .noOverwrite the refusal is a `false` result instead, and the
            // transaction stays usable.
            try env.write { txn throws in
                #expect(try txn.put(log, key: BigEndian.bytes(UInt64(5)), value: [UInt8]("late"), flags: [.noOverwrite, .append]) == false)
                #expect(try txn.put(log, key: BigEndian.bytes(UInt64(1000)), value: [UInt8]("dup"), flags: [.noOverwrite, .append]) == false)
                #expect(try txn.put(log, key: BigEndian.bytes(UInt64(1001)), value: [UInt8]("next"), flags: [.noOverwrite, .append]))
            }
            try env.read { txn throws in
                #expect(try txn.count(log) == 1001)
                let last = try #require(try txn.last(log))
                #expect(BigEndian.decode(UInt64.self, from: last.key) == 1001)
            }
        }
    }

    @Test func dupSortTablesHoldSortedValuesPerKey() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let index = try env.table("index", options: .dupSort)
            try env.write { txn throws in
                for value in ["cherry", "apple", "banana"] {
                    try txn.put(index, key: [UInt8]("fruit"), value: [UInt8](value))
                }
                try txn.put(index, key: [UInt8]("veg"), value: [UInt8]("leek"))
                #expect(try txn.put(index, key: [UInt8]("fruit"), value: [UInt8]("apple"), flags: .noDupData) == false)
                #expect(throws: StorageError.valueTooLarge(512)) {
                    try txn.put(index, key: [UInt8]("fruit"), value: [UInt8](repeating: 0, count: 512))
                }
            }
            try env.read { txn throws in
                var fruit: [String] = []
                try txn.values(index, key: [UInt8]("fruit")) { value in
                    fruit.append(String(decoding: value, as: UTF8.self))
                    return true
                }
                #expect(fruit == ["apple", "banana", "cherry"])
                #expect(try txn.valueCount(index, key: [UInt8]("fruit")) == 3)
                #expect(try txn.valueCount(index, key: [UInt8]("none")) == 0)
                #expect(try txn.count(index) == 4)
                #expect(try txn.get(index, key: [UInt8]("fruit")) == [UInt8]("apple"))
            }
            try env.write { txn throws in
                #expect(try txn.delete(index, key: [UInt8]("fruit"), value: [UInt8]("banana")))
                #expect(try txn.delete(index, key: [UInt8]("fruit"), value: [UInt8]("banana")) == false)
            }
            try env.read { txn throws in
                #expect(try txn.valueCount(index, key: [UInt8]("fruit")) == 2)
                let last = try #require(try txn.last(index))
                #expect(last.key == [UInt8]("veg"))
            }
            try env.write { txn throws in
                #expect(try txn.delete(index, key: [UInt8]("fruit")))
            }
            try env.read { txn throws in #expect(try txn.count(index) == 1) }
        }
    }

    @Test func deleteWithValueOnPlainTableOnlyDeletesOnMatch() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                try txn.put(table, key: [UInt8]("k"), value: [UInt8]("v1"))
                #expect(try txn.delete(table, key: [UInt8]("k"), value: [UInt8]("other")) == false)
                #expect(try txn.contains(table, key: [UInt8]("k")))
                #expect(try txn.delete(table, key: [UInt8]("k"), value: [UInt8]("v1")))
                #expect(try txn.contains(table, key: [UInt8]("k")) == false)
            }
        }
    }

    @Test func reserveWritesValueInPlace() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("blobs")
            try env.write { txn throws in
                try txn.reserve(table, key: [UInt8]("blob"), count: 10_000) { buffer in
                    for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: index) }
                }
            }
            let stored = try env.read { try $0.get(table, key: [UInt8]("blob")) }
            #expect(stored == (0..<10_000).map { UInt8(truncatingIfNeeded: $0) })
        }
    }

    @Test func clearEmptiesTheTableButKeepsTheHandle() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                for index in UInt32(0)..<100 { try txn.put(table, key: BigEndian.bytes(index), value: [UInt8]("x")) }
            }
            try env.write { try $0.clear(table) }
            try env.read { txn throws in #expect(try txn.count(table) == 0) }
            try env.write { try $0.put(table, key: [UInt8]("again"), value: [UInt8]("y")) }
            try env.read { txn throws in #expect(try txn.count(table) == 1) }
        }
    }

    @Test func acceptsAnyContiguousBytesWithoutCopying() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            let key = Data("data-key".utf8)
            let value: ArraySlice<UInt8> = [0, 1, 2, 3, 4][1...3]
            try env.write { txn throws in
                _ = try [UInt8]("raw").withUnsafeBytes { raw in
                    try txn.put(table, key: raw, value: raw)
                }
                try txn.put(table, key: key, value: value)
            }
            try env.read { txn throws in
                #expect(try txn.get(table, key: key) == [1, 2, 3])
                #expect(try txn.get(table, key: [UInt8]("raw")) == [UInt8]("raw"))
            }
        }
    }
}
