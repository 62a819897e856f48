import CLMDB
import Foundation

/// The baseline the log is measured against: LMDB through its C API with nothing on
/// top — no wrapper, no locks of ours, no hashing, compression or indexes. One named
/// table, keys `u64` big-endian, values stored as given.
///
/// Opened with the same flags `LMDBEnvironment` uses by default (`MDB_NOTLS`, fsync
/// on commit), so durable here means what it means for the log.
final class RawLMDB {
    private let env: OpaquePointer
    private var dbi = MDB_dbi()

    /// Opens (creating, with its directory) an environment in `path` with table `table`.
    init(path: String, table: String = "log", mapSize: Int = 1 << 30, readOnly: Bool = false) throws {
        if !readOnly { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        var created: OpaquePointer?
        try Self.check(mdb_env_create(&created), "mdb_env_create")
        guard let env = created else { throw BenchFailure("mdb_env_create returned no environment") }
        self.env = env
        try Self.check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize")
        try Self.check(mdb_env_set_maxdbs(env, 32), "mdb_env_set_maxdbs")
        let flags = UInt32(MDB_NOTLS) | (readOnly ? UInt32(MDB_RDONLY) : 0)
        try Self.check(mdb_env_open(env, path, flags, 0o644), "mdb_env_open")
        try transaction(readOnly: readOnly) { txn in
            try Self.check(mdb_dbi_open(txn, table, readOnly ? 0 : UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
        }
    }

    deinit { mdb_env_close(env) }

    /// Stores `values[range]` under keys `range.lowerBound + 1 …`, `perTransaction`
    /// puts per write transaction (1 = one durable commit per value). `MDB_APPEND`,
    /// as the log itself uses for its frames, since keys only grow.
    func put(_ values: [[UInt8]], _ range: Range<Int>, perTransaction: Int) throws {
        var start = range.lowerBound
        while start < range.upperBound {
            let end = min(range.upperBound, start + perTransaction)
            try transaction(readOnly: false) { txn in
                for index in start..<end {
                    var key = UInt64(index + 1).bigEndian
                    try values[index].withUnsafeBytes { value in
                        try withUnsafeMutableBytes(of: &key) { keyBytes in
                            var keyVal = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                            var valueVal = MDB_val(
                                mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                            try Self.check(mdb_put(txn, dbi, &keyVal, &valueVal, UInt32(MDB_APPEND)), "mdb_put")
                        }
                    }
                }
            }
            start = end
        }
    }

    /// Walks the table with `MDB_NEXT`, touching every value (summing its first byte,
    /// so the page is really read); returns (entries, the sum).
    func scan() throws -> (count: Int, checksum: UInt64) {
        var count = 0
        var sum: UInt64 = 0
        try transaction(readOnly: true) { txn in
            var cursor: OpaquePointer?
            try Self.check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val()
            var value = MDB_val()
            while true {
                let rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                if rc == MDB_NOTFOUND { break }
                try Self.check(rc, "mdb_cursor_get")
                count += 1
                if value.mv_size > 0, let data = value.mv_data {
                    sum &+= UInt64(data.load(as: UInt8.self))
                }
            }
        }
        return (count, sum)
    }

    /// Bytes of pages in use (last page number + 1, times the page size).
    func usedBytes() throws -> Int {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        try Self.check(mdb_env_info(env, &info), "mdb_env_info")
        try Self.check(mdb_env_stat(env, &stat), "mdb_env_stat")
        return (info.me_last_pgno + 1) * Int(stat.ms_psize)
    }

    private func transaction(readOnly: Bool, _ body: (OpaquePointer) throws -> Void) throws {
        var txn: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn), "mdb_txn_begin")
        guard let txn else { throw BenchFailure("mdb_txn_begin returned no transaction") }
        do {
            try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        // Read-only too: committing keeps the dbi opened in it valid afterwards.
        try Self.check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    private static func check(_ rc: Int32, _ operation: String) throws {
        guard rc == 0 else { throw BenchFailure("\(operation): \(String(cString: mdb_strerror(rc)))") }
    }
}
