import CumulusTestSupport
import Testing

@testable import CumulusStorage

@Suite("Cursors")
struct LMDBCursorTests {
    @Test func cursorMovesAndSeeks() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.write { txn throws in
                for key in ["b", "d", "f"] { try txn.put(table, key: [UInt8](key), value: [UInt8](key.uppercased())) }
            }
            func text(_ entry: LMDBCursor.Entry?) -> String? {
                entry.map { String(decoding: $0.key, as: UTF8.self) + String(decoding: $0.value, as: UTF8.self) }
            }
            try env.read { txn throws in
                try txn.withCursor(table) { cursor throws in
                    #expect(text(try cursor.first()) == "bB")
                    #expect(text(try cursor.next()) == "dD")
                    #expect(text(try cursor.current()) == "dD")
                    #expect(text(try cursor.next()) == "fF")
                    #expect(text(try cursor.next()) == nil)
                    #expect(text(try cursor.last()) == "fF")
                    #expect(text(try cursor.previous()) == "dD")
                    #expect(text(try cursor.seek(atOrAfter: [UInt8]("c"))) == "dD")
                    #expect(text(try cursor.seek(atOrAfter: [UInt8]("g"))) == nil)
                    #expect(text(try cursor.seek(to: [UInt8]("f"))) == "fF")
                    // A plain table holds one value under a key.
                    #expect(try cursor.duplicateCount() == 1)
                    #expect(text(try cursor.seek(to: [UInt8]("e"))) == nil)
                    #expect(throws: StorageError.emptyKey) { try cursor.seek(to: [UInt8]()) }
                }
            }
        }
    }

    @Test func cursorWalksDuplicates() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("index", options: .dupSort)
            try env.write { txn throws in
                for value in ["3", "1", "2"] { try txn.put(table, key: [UInt8]("k"), value: [UInt8](value)) }
                try txn.put(table, key: [UInt8]("m"), value: [UInt8]("9"))
            }
            try env.read { txn throws in
                try txn.withCursor(table) { cursor throws in
                    let first = try #require(try cursor.seek(to: [UInt8]("k")))
                    #expect(Array(first.value) == [UInt8]("1"))
                    #expect(try cursor.duplicateCount() == 3)
                    #expect(try cursor.nextDuplicate().map { Array($0.value) } == [UInt8]("2"))
                    #expect(try cursor.lastDuplicate().map { Array($0.value) } == [UInt8]("3"))
                    #expect(try cursor.nextDuplicate() == nil)
                    #expect(try cursor.previousDuplicate().map { Array($0.value) } == [UInt8]("2"))
                    #expect(try cursor.nextKey().map { Array($0.key) } == [UInt8]("m"))
                    #expect(try cursor.previousKey().map { Array($0.value) } == [UInt8]("3"))
                }
            }
        }
    }

    @Test func cursorsCannotEscapeTheirClosure() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("items")
            try env.read { txn throws in
                let escaped = try txn.withCursor(table) { $0 }
                #expect(throws: StorageError.self) { try escaped.first() }
            }
        }
    }
}
