import CLMDB
import CumulusTestSupport
import Foundation
import Synchronization
import Testing

@testable import CumulusStorage

@Suite("Environment")
struct LMDBEnvironmentTests {
    @Test func createsMissingDirectoriesAndReopensAfterCleanClose() throws {
        try TemporaryDirectory.with("storage") { path in
            let nested = path + "/a/b/env"
            do {
                let env = try LMDBEnvironment(path: nested)
                let table = try env.table("items")
                try env.write { try $0.put(table, key: [UInt8]("k"), value: [UInt8]("v")) }
            }  // closed here
            #expect(FileManager.default.fileExists(atPath: nested + "/data.mdb"))
            let reopened = try LMDBEnvironment(path: nested)
            let table = try reopened.table("items")
            try reopened.read { txn throws in #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("v")) }
        }
    }

    @Test func writesContinuePastATinyInitialMap() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.mapSize = 256 * 1024
            let value = { (index: UInt32) in [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 10_000) }
            do {
                let env = try LMDBEnvironment(path: path, options: options)
                let table = try env.table("blobs")
                // 20 MB in batches of 100 values: most batches find the map full.
                for batch in UInt32(0)..<20 {
                    try env.write { txn throws in
                        for index in (batch * 100)..<((batch + 1) * 100) {
                            try txn.put(table, key: BigEndian.bytes(index), value: value(index))
                        }
                    }
                }
                #expect(try env.info().mapSize > 20_000_000)
                try env.read { txn throws in
                    #expect(try txn.count(table) == 2000)
                    for index in UInt32(0)..<2000 {
                        #expect(try txn.get(table, key: BigEndian.bytes(index)) == value(index))
                    }
                }
            }
            let reopened = try LMDBEnvironment(path: path, options: options)
            let table = try reopened.table("blobs")
            try reopened.read { txn throws in
                #expect(try txn.count(table) == 2000)
                #expect(try txn.get(table, key: BigEndian.bytes(UInt32(1999))) == value(1999))
            }
        }
    }

    @Test func aSingleLargeWriteIsRetriedFromTheStartAfterGrowth() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path, options: .init(mapSize: 256 * 1024))
            let table = try env.table("blobs")
            var runs = 0
            try env.write { txn throws in
                runs += 1
                for index in UInt32(0)..<500 {
                    try txn.put(table, key: BigEndian.bytes(index), value: [UInt8](repeating: 7, count: 10_000))
                }
            }
            #expect(runs > 1)
            try env.read { txn throws in #expect(try txn.count(table) == 500) }
        }
    }

    @Test func mapFullIsRetriedEvenWhenTheBodySwallowsIt() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path, options: .init(mapSize: 256 * 1024))
            let table = try env.table("blobs")
            try env.write { txn throws in
                for index in UInt32(0)..<100 {
                    do {
                        try txn.put(table, key: BigEndian.bytes(index), value: [UInt8](repeating: 1, count: 10_000))
                    } catch let error as StorageError where error.isMapFull {
                        return
                    }
                }
            }
            try env.read { txn throws in #expect(try txn.count(table) == 100) }
        }
    }

    @Test func growthStopsAtMaxMapSize() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options(mapSize: 256 * 1024)
            options.maxMapSize = 1024 * 1024
            let env = try LMDBEnvironment(path: path, options: options)
            let table = try env.table("blobs")
            let error = #expect(throws: StorageError.self) {
                try env.write { txn throws in
                    for index in UInt32(0)..<300 {
                        try txn.put(table, key: BigEndian.bytes(index), value: [UInt8](repeating: 1, count: 10_000))
                    }
                }
            }
            #expect(error?.isMapFull == true)
            try env.read { txn throws in #expect(try txn.count(table) == 0) }
        }
    }

    @Test func concurrentWritersAndReadersSurviveMapGrowth() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path, options: .init(mapSize: 256 * 1024))
            let table = try env.table("items")
            let failures = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { worker in
                do {
                    for round in UInt32(0)..<20 {
                        if worker % 2 == 0 {
                            try env.write { txn throws in
                                for item in UInt32(0)..<10 {
                                    var key = KeyBuilder()
                                    key.append(UInt32(worker))
                                    key.append(round)
                                    key.append(item)
                                    try txn.put(table, key: key.bytes, value: [UInt8](repeating: 3, count: 2_000))
                                }
                            }
                        } else {
                            try env.read { txn throws in
                                var seen = 0
                                try txn.scan(table) { _, value in
                                    if value.count != 2_000 { failures.add(1, ordering: .relaxed) }
                                    seen += 1
                                    return true
                                }
                                if try seen != txn.count(table) { failures.add(1, ordering: .relaxed) }
                            }
                        }
                    }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0)
            try env.read { txn throws in #expect(try txn.count(table) == 4 * 20 * 10) }
        }
    }

    @Test func writeInsideATransactionIsRefusedInsteadOfDeadlocking() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.read { _ in
                #expect(throws: StorageError.self) { try env.write { _ in } }
                #expect(throws: StorageError.self) { try env.table("other") }
            }
            try env.write { _ in
                #expect(throws: StorageError.self) { try env.write { _ in } }
                // A read inside a write is fine and sees only committed data.
                try env.read { txn throws in #expect(try txn.count(table) == 0) }
            }
            // State is restored afterwards.
            try env.write { try $0.put(table, key: [UInt8]("k"), value: [UInt8]("v")) }
        }
    }

    @Test func transactionsCannotBeUsedAfterTheirClosure() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            let escaped = try env.read { $0 }
            #expect(throws: StorageError.self) { try escaped.get(table, key: [UInt8]("k")) }
            let escapedWrite = try env.write { $0 }
            #expect(throws: StorageError.self) { try escapedWrite.put(table, key: [UInt8]("k"), value: [UInt8]("v")) }
        }
    }

    @Test func tablesAreCachedAndBoundToTheirEnvironment() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path + "/one")
            let other = try LMDBEnvironment(path: path + "/two")
            let table = try env.table("items")
            #expect(try env.table("items") == table)
            #expect(throws: StorageError.self) { try env.table("items", options: .dupSort) }
            _ = try other.table("items")
            #expect(throws: StorageError.self) { try other.read { try $0.get(table, key: [UInt8]("k")) } }
        }
    }

    @Test func reopeningATableWithOtherOptionsFails() throws {
        try TemporaryDirectory.with("storage") { path in
            do {
                let env = try LMDBEnvironment(path: path)
                _ = try env.table("index", options: .dupSort)
            }
            let env = try LMDBEnvironment(path: path)
            let error = #expect(throws: StorageError.self) { try env.table("index") }
            #expect(error?.lmdbCode == MDB_INCOMPATIBLE)
        }
    }

    @Test func tooManyTablesIsReported() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.maxTables = 2
            let env = try LMDBEnvironment(path: path, options: options)
            _ = try env.table("a")
            _ = try env.table("b")
            let error = #expect(throws: StorageError.self) { try env.table("c") }
            #expect(error?.isTablesFull == true)
        }
    }

    @Test func readOnlyEnvironmentsReadButRefuseWrites() throws {
        try TemporaryDirectory.with("storage") { path in
            do {
                let env = try LMDBEnvironment(path: path)
                let table = try env.table("items")
                try env.write { try $0.put(table, key: [UInt8]("k"), value: [UInt8]("v")) }
            }
            var options = LMDBEnvironment.Options()
            options.readOnly = true
            let env = try LMDBEnvironment(path: path, options: options)
            let table = try env.table("items")
            try env.read { txn throws in #expect(try txn.get(table, key: [UInt8]("k")) == [UInt8]("v")) }
            #expect(throws: StorageError.self) { try env.write { _ in } }
            let missing = #expect(throws: StorageError.self) { try env.table("missing") }
            #expect(missing?.isNotFound == true)
        }
    }

    @Test func openingAMissingReadOnlyEnvironmentFailsCleanly() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.readOnly = true
            let error = #expect(throws: StorageError.self) { try LMDBEnvironment(path: path, options: options) }
            #expect(error?.lmdbCode == ENOENT)
        }
    }

    @Test func openingAFileThatIsNotLMDBFails() throws {
        try TemporaryDirectory.with("storage") { path in
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try Data(repeating: 0xAB, count: 64 * 1024).write(to: URL(fileURLWithPath: path + "/data.mdb"))
            let error = #expect(throws: StorageError.self) { try LMDBEnvironment(path: path) }
            #expect(error?.isCorruption == true)
        }
    }

    @Test func maxReadersAboveLMDBsDefaultIsHonoured() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            #expect(try env.info().maxReaders == 512)
            // Each nested read holds its own slot; 200 exceeds LMDB's default of 126.
            func nest(_ depth: Int) throws -> Int {
                try env.read { _ in depth == 0 ? 0 : try nest(depth - 1) + 1 }
            }
            #expect(try nest(200) == 200)
        }
    }

    @Test func runningOutOfReaderSlotsIsReported() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.maxReaders = 4
            let env = try LMDBEnvironment(path: path, options: options)
            func nest(_ depth: Int) throws {
                try env.read { _ in if depth > 0 { try nest(depth - 1) } }
            }
            try nest(3)
            let error = #expect(throws: StorageError.self) { try nest(4) }
            #expect(error?.isReadersFull == true)
            try nest(3)  // slots were released
        }
    }

    @Test func readerCheckRunsAndFindsNoStaleReadersInALiveProcess() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            for _ in 0..<10 { try env.read { _ = try $0.count(table) } }
            #expect(try env.readerCheck() == 0)
        }
    }

    @Test func infoReportsSizeAndTables() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path, options: .init(mapSize: 4 * 1024 * 1024))
            _ = try env.table("a")
            _ = try env.table("b")
            let info = try env.info()
            #expect(info.mapSize == 4 * 1024 * 1024)
            #expect(info.tableCount == 2)
            #expect(info.pageSize > 0)
            #expect(info.lastTransactionID == 2)
            #expect(info.usedBytes > 0)
        }
    }

    @Test func copyProducesAnOpenableSnapshot() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path + "/live", options: .init(mapSize: 1 << 20, durable: false))
            let table = try env.table("items")
            try env.write { txn throws in
                for index in UInt32(0)..<1000 { try txn.put(table, key: BigEndian.bytes(index), value: [UInt8]("v")) }
            }
            try env.write { txn throws in
                for index in UInt32(0)..<500 { try txn.delete(table, key: BigEndian.bytes(index)) }
            }
            try env.sync(force: true)
            try env.copy(to: path + "/copy")
            try env.copy(to: path + "/compact", compact: true)
            for copy in ["copy", "compact"] {
                let snapshot = try LMDBEnvironment(path: path + "/" + copy)
                let copied = try snapshot.table("items")
                try snapshot.read { txn throws in #expect(try txn.count(copied) == 500) }
            }
        }
    }

    @Test func nonsensicalOptionsAreRejected() throws {
        try TemporaryDirectory.with("storage") { path in
            var options = LMDBEnvironment.Options()
            options.maxReaders = 0
            #expect(throws: StorageError.self) { try LMDBEnvironment(path: path, options: options) }
        }
    }
}
