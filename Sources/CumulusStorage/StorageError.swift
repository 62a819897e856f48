import CLMDB
import CZstd

/// Every failure the storage layer reports.
///
/// An enum rather than a struct: Swift 6.3.1 crashes compiling `do/catch` blocks that
/// catch only some values of a struct error thrown with typed throws.
///
/// Values are plain data and `Sendable`; they never hold pointers into a map or a context.
public enum StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An LMDB call failed. `code` is LMDB's return code: one of the `MDB_*` codes
    /// (negative) or an `errno` value (positive). `message` comes from `mdb_strerror`.
    case lmdb(code: Int32, operation: String, message: String)
    /// A key longer than the environment's maximum key size (511 bytes by default).
    /// Checked before LMDB is called, so the transaction stays usable.
    case keyTooLarge(Int)
    /// LMDB refuses zero-length keys. Checked before LMDB is called.
    case emptyKey
    /// A value in a `.dupSort` table longer than the maximum key size (such values are
    /// stored as keys of a sub-database). Checked before LMDB is called.
    case valueTooLarge(Int)
    /// A zstd call failed. `code` is `ZSTD_getErrorCode`'s value; `message` is
    /// `ZSTD_getErrorName`'s text.
    case zstd(code: Int, operation: String, message: String)
    /// Stored bytes are not what was written: a malformed frame, a size mismatch,
    /// a checksum failure found outside zstd.
    case corrupt(String)
    /// A compressed frame declares (or would need) more output than the caller allowed.
    case sizeLimitExceeded(size: UInt64, limit: Int)
    /// A frame was compressed with a dictionary whose ID the decompressor does not hold.
    case unknownDictionary(id: UInt32)
    /// The caller broke a documented precondition: a transaction used after its
    /// closure returned, a table from another environment, a nested write, etc.
    case invalidArgument(String)

    /// A one-line explanation naming the failed operation, for logs and error messages.
    public var description: String {
        switch self {
        case let .lmdb(code, operation, message):
            return "LMDB error \(code) in \(operation): \(message)"
        case let .keyTooLarge(size):
            return "key of \(size) bytes exceeds LMDB's maximum key size"
        case .emptyKey:
            return "LMDB keys must not be empty"
        case let .valueTooLarge(size):
            return "value of \(size) bytes exceeds the maximum for a duplicate-sorted table"
        case let .zstd(code, operation, message):
            return "zstd error \(code) in \(operation): \(message)"
        case let .corrupt(detail):
            return "corrupt data: \(detail)"
        case let .sizeLimitExceeded(size, limit):
            return "decompressed size \(size) exceeds the limit of \(limit) bytes"
        case let .unknownDictionary(id):
            return "frame needs zstd dictionary \(id), which is not loaded"
        case let .invalidArgument(detail):
            return "invalid argument: \(detail)"
        }
    }

    /// The LMDB or errno code if this is an `.lmdb` error.
    public var lmdbCode: Int32? {
        if case let .lmdb(code, _, _) = self { return code }
        return nil
    }

    /// The map is full. `LMDBEnvironment.write` handles this itself by growing the map
    /// and re-running the body; callers see it only when `Options.maxMapSize` is reached.
    public var isMapFull: Bool { lmdbCode == MDB_MAP_FULL }
    /// A lookup, cursor move or delete found nothing.
    public var isNotFound: Bool { lmdbCode == MDB_NOTFOUND }
    /// A put with `.noOverwrite`/`.noDupData`/`.append` met an existing or out-of-order key.
    public var isKeyExists: Bool { lmdbCode == MDB_KEYEXIST }
    /// Every reader slot is taken: raise `Options.maxReaders` or end long reads.
    public var isReadersFull: Bool { lmdbCode == MDB_READERS_FULL }
    /// Another process grew the map while this one had a transaction open.
    public var isMapResized: Bool { lmdbCode == MDB_MAP_RESIZED }
    /// More named tables than `Options.maxTables`.
    public var isTablesFull: Bool { lmdbCode == MDB_DBS_FULL }
    /// The transaction had already failed (LMDB marks it unusable after most errors).
    public var isBadTransaction: Bool { lmdbCode == MDB_BAD_TXN }
    /// The disk is full (`ENOSPC`) or the file size limit was hit (`EFBIG`).
    public var isDiskFull: Bool { lmdbCode == 28 /* ENOSPC */ || lmdbCode == 27 /* EFBIG */ }
    /// Permission denied, or a write attempted on a read-only environment.
    public var isPermissionDenied: Bool {
        lmdbCode == 13 /* EACCES */ || lmdbCode == 1 /* EPERM */ || lmdbCode == 30 /* EROFS */
    }

    /// The database file or stored bytes are damaged, or the file is not an LMDB
    /// environment this library can read. Restore from a copy; retrying will not help.
    public var isCorruption: Bool {
        switch self {
        case .corrupt:
            return true
        case let .lmdb(code, _, _):
            return code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND || code == MDB_PANIC
                || code == MDB_INVALID || code == MDB_VERSION_MISMATCH
        case let .zstd(_, operation, _):
            // Only decoding failures mean damaged input; compression failures do not.
            return operation.hasPrefix("ZSTD_decompress") || operation.hasPrefix("ZSTD_findFrame")
        default:
            return false
        }
    }

    /// Throws `.lmdb` for any nonzero LMDB return code.
    @inline(__always)
    static func check(_ code: Int32, _ operation: @autoclosure () -> String) throws(StorageError) {
        if code != 0 { throw .lmdb(code, operation()) }
    }

    /// Builds a `.zstd` error from a `size_t` result for which `ZSTD_isError` is true.
    static func zstd(_ result: Int, _ operation: String) -> StorageError {
        let message = ZSTD_getErrorName(result).map { String(cString: $0) } ?? "unknown error"
        return .zstd(code: Int(ZSTD_getErrorCode(result).rawValue), operation: operation, message: message)
    }

    /// Builds an `.lmdb` error with LMDB's own text for `code`.
    static func lmdb(_ code: Int32, _ operation: String) -> StorageError {
        let message = mdb_strerror(code).map { String(cString: $0) } ?? "unknown error"
        return .lmdb(code: code, operation: operation, message: message)
    }
}
