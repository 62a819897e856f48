import CSQLite
import Foundation

/// The baseline the engine is measured against: SQLite through its C API, nothing
/// on top. A connection, `exec` for statements without results, and prepared
/// statements (bind / step / reset, finalized when released). Every return code is
/// checked; a failure throws `BenchFailure` with SQLite's message.
///
/// Not `Sendable`: one connection is used from one task at a time (SQLite
/// serializes writers anyway).
final class SQLiteDatabase {
    fileprivate let handle: OpaquePointer

    /// Opens (creating) the database file at `path`, full mutex off (one user).
    init(path: String) throws {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &opened, flags, nil)
        guard let opened else { throw BenchFailure("sqlite3_open_v2(\(path)): out of memory") }
        guard rc == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(opened))
            sqlite3_close_v2(opened)
            throw BenchFailure("sqlite3_open_v2(\(path)): \(message)")
        }
        handle = opened
    }

    deinit { sqlite3_close_v2(handle) }

    /// The linked library's version, e.g. "3.40.1".
    static var libraryVersion: String { sqlite3_libversion().map { String(cString: $0) } ?? "unknown" }

    /// Runs one or more statements that return no rows we need.
    func exec(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if let error {
            let message = String(cString: error)
            sqlite3_free(error)
            throw BenchFailure("sqlite3_exec(\(sql)): \(message)")
        }
        try check(rc, "sqlite3_exec(\(sql))")
    }

    /// Compiles `sql` once, for repeated bind / step / reset.
    func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(self, sql)
    }

    /// The single integer a query like `SELECT count(*) …` returns.
    func scalar(_ sql: String) throws -> Int64 {
        let statement = try prepare(sql)
        guard try statement.step() else { throw BenchFailure("\(sql): no row") }
        return statement.int64(0)
    }

    fileprivate func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
        guard rc == SQLITE_OK else {
            throw BenchFailure("\(operation()): \(String(cString: sqlite3_errmsg(handle))) (\(rc))")
        }
    }
}

/// A prepared statement of one connection. Parameters are 1-based, columns 0-based,
/// as in the C API. Text and blobs are bound `SQLITE_TRANSIENT` (SQLite copies them),
/// so the Swift values need not outlive the call.
final class SQLiteStatement {
    private let database: SQLiteDatabase
    private let statement: OpaquePointer
    private let sql: String

    fileprivate init(_ database: SQLiteDatabase, _ sql: String) throws {
        var prepared: OpaquePointer?
        try database.check(sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil),
            "sqlite3_prepare_v3(\(sql))")
        guard let prepared else { throw BenchFailure("sqlite3_prepare_v3(\(sql)): no statement (empty SQL?)") }
        self.database = database
        self.statement = prepared
        self.sql = sql
    }

    deinit { sqlite3_finalize(statement) }

    /// SQLite's "copy this buffer now" destructor sentinel (`(sqlite3_destructor_type)-1`),
    /// which the C macro `SQLITE_TRANSIENT` does not import as.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ index: Int32, text: String) throws {
        try database.check(sqlite3_bind_text(statement, index, text, -1, Self.transient), "bind text \(index) of \(sql)")
    }

    func bind(_ index: Int32, blob: [UInt8]) throws {
        let rc = blob.withUnsafeBytes { bytes in
            sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), Self.transient)
        }
        try database.check(rc, "bind blob \(index) of \(sql)")
    }

    /// Binds `text`, or SQL NULL for `nil`.
    func bind(_ index: Int32, int value: Int64) throws {
        try database.check(sqlite3_bind_int64(statement, index, value), "bind integer \(index) of \(sql)")
    }

    func bind(_ index: Int32, optionalText text: String?) throws {
        if let text { try bind(index, text: text) } else { try bindNull(index) }
    }

    func bindNull(_ index: Int32) throws {
        try database.check(sqlite3_bind_null(statement, index), "bind null \(index) of \(sql)")
    }

    /// Steps once: `true` if a row is ready, `false` when done. On an error the
    /// statement is reset (so the next use starts clean) and the error thrown.
    @discardableResult
    func step() throws -> Bool {
        let rc = sqlite3_step(statement)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            // sqlite3_reset returns the same error code; the message is the step's.
            let message = String(cString: sqlite3_errmsg(database.handle))
            sqlite3_reset(statement)
            throw BenchFailure("sqlite3_step(\(sql)): \(message) (\(rc))")
        }
    }

    /// Readies the statement to run again; bindings are kept.
    func reset() throws {
        try database.check(sqlite3_reset(statement), "sqlite3_reset(\(sql))")
    }

    /// Runs a statement that returns no rows to completion, then resets it.
    func run() throws {
        while try step() {}
        try reset()
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    /// Column `column` as text (`nil` for NULL).
    func text(_ column: Int32) -> String? {
        sqlite3_column_text(statement, column).map { String(cString: $0) }
    }

    /// Calls `body` with column `column`'s blob, valid only during the call
    /// (SQLite owns the bytes until the next step or reset).
    func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let pointer = sqlite3_column_blob(statement, column)
        let count = Int(sqlite3_column_bytes(statement, column))
        return try body(UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }
}
