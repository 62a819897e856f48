extension LMDBEnvironment {
    /// How an environment is opened. Read once by `init`; changing a copy afterwards
    /// has no effect on an open environment.
    public struct Options: Sendable, Equatable {
        /// Initial size of the memory map in bytes; also the data file's maximum size
        /// until the map grows. Writes never fail for lack of map space: `write` grows the
        /// map (doubling, by at most `maxGrowthStep`) up to `maxMapSize`. A large value costs
        /// address space only, not disk. Reopening an environment whose data is larger
        /// than this uses the larger size recorded in the file.
        public var mapSize: Int = 1 << 30
        /// Upper bound for automatic map growth. Reaching it makes `write` throw an
        /// error for which `isMapFull` is true.
        public var maxMapSize: Int = 1 << 40
        /// Largest single growth step, so a large map does not double into terabytes.
        public var maxGrowthStep: Int = 1 << 30
        /// Reader slots in the lock file; every open read transaction (in any process)
        /// holds one. Only takes effect when the lock file is created, i.e. when no
        /// process has the environment open.
        public var maxReaders: Int = 512
        /// Maximum number of named tables.
        public var maxTables: Int = 64
        /// When `false`, commits do not fsync (`MDB_NOSYNC`). **Unsafe**: a system crash
        /// (not an application crash) can lose recent commits or corrupt the database.
        /// Opt in only for data that can be rebuilt, or call `sync(force:)` yourself.
        public var durable: Bool = true
        /// Open with `MDB_RDONLY`: `write` and table creation fail. The directory must
        /// already hold an environment.
        public var readOnly: Bool = false
        /// Keep the OS's read-ahead (the default). Set `false` (`MDB_NORDAHEAD`) when the
        /// database is much larger than RAM and reads are random; for the usual case of a
        /// database that fits in RAM and is replayed sequentially, read-ahead helps.
        public var readAhead: Bool = true
        /// File mode for newly created data and lock files (``FilePermissions/file``:
        /// they hold every record and the secrets).
        public var fileMode: UInt32 = UInt32(FilePermissions.file)

        /// The defaults documented on each property.
        public init() {}

        /// Convenience for the options tests and tools most often change.
        public init(mapSize: Int, durable: Bool = true, readOnly: Bool = false) {
            self.mapSize = mapSize
            self.durable = durable
            self.readOnly = readOnly
        }
    }
}
