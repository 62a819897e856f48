/// A snapshot of an environment's size and usage, from `mdb_env_info` and `mdb_env_stat`.
/// Values may be stale as soon as they are returned if another thread or process writes.
public struct LMDBEnvironmentInfo: Sendable, Equatable {
    /// Current size of the memory map (and maximum data file size) in bytes.
    public var mapSize: Int
    /// Number of the last page in use; `(lastPageNumber + 1) * pageSize` is the used size.
    public var lastPageNumber: Int
    /// ID of the last committed transaction.
    public var lastTransactionID: Int
    /// Reader slots in the lock file.
    public var maxReaders: Int
    /// Reader slots ever used since the lock file was created (not just currently open).
    public var readersUsed: Int
    /// Database page size in bytes.
    public var pageSize: Int
    /// Entries in the main table, i.e. the number of named tables.
    public var tableCount: Int

    /// Bytes of the map in use.
    public var usedBytes: Int { (lastPageNumber + 1) * pageSize }
}
