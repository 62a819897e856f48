import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: one directory holding `data.mdb` and `lock.mdb`.
///
/// **Lifetime.** The environment is closed (`mdb_env_close`) when the last reference goes
/// away. Open a given directory at most once per process: LMDB's locks are per-process
/// `fcntl` locks, and closing a second handle to the same files silently drops the first
/// one's locks.
///
/// **Transactions** exist only inside `read { }` and `write { }` closures. The closures are
/// synchronous, so a transaction can never span an `await`, never outlive its scope, and a
/// write transaction always begins and commits on the same OS thread, as LMDB requires.
///
/// **Threads.** Any thread may call any method. Reads run concurrently with each other and
/// with the single writer. Writers in this process are serialized by a lock taken before
/// LMDB's own writer mutex.
///
/// **Nesting on one thread.** A `read` inside a `read` or a `write` is allowed. A `write`,
/// `table(_:options:)` or `copy(to:compact:)` inside any transaction of the same
/// environment on the same thread throws `StorageError.invalidArgument`, because it could
/// deadlock against map growth or against LMDB's writer mutex.
///
/// **Map growth.** `write` never fails for lack of map space below `Options.maxMapSize`:
/// on `MDB_MAP_FULL` it aborts, grows the map while no transaction of this process is open,
/// and runs the body again from the start (see `write(_:)`).
public final class LMDBEnvironment: @unchecked Sendable {
    // @unchecked Sendable: `handle` is an MDB_env*, which LMDB allows to be used from many
    // threads at once (with MDB_NOTLS, read transactions are not bound to threads either).
    // The one env call that is not thread-safe, mdb_env_set_mapsize, runs only with
    // `mapLock` held exclusively. mdb_dbi_open runs only with `writerLock` held. The table
    // cache is inside a Mutex. `spareDeferred` is used only with `writerLock` held. Every
    // other stored property is immutable after init.

    /// The directory passed to `init`.
    public let path: String
    /// The options the environment was opened with.
    public let options: Options
    /// Longest key accepted, from `mdb_env_get_maxkeysize` (511 with Debian's build).
    /// Also the longest value in a `.dupSort` table.
    public let maxKeySize: Int

    let handle: OpaquePointer
    let id: UInt64
    private let pageSize: Int
    private let mapLock: ReadWriteLock
    private let writerLock: WriterLock
    private let threadState: ThreadTransactionState
    private let tables: Mutex<[String: LMDBTable]>
    /// The last write transaction's emptied deferred-write buffers, handed to the next
    /// (``DeferredWrites``). Read and written only with `writerLock` held.
    private var spareDeferred: DeferredWrites?

    private static let nextID = Atomic<UInt64>(1)

    /// Opens (and, unless `options.readOnly`, creates) the environment in directory `path`,
    /// creating missing directories. Clears reader slots left by dead processes.
    ///
    /// - Throws: `.invalidArgument` for nonsensical options; `.lmdb` for open failures,
    ///   e.g. `EACCES`, `MDB_INVALID` (not an LMDB file), `MDB_VERSION_MISMATCH`.
    public init(path: String, options: Options = .init()) throws(StorageError) {
        guard options.mapSize > 0, options.maxMapSize > 0, options.maxGrowthStep > 0 else {
            throw .invalidArgument("map sizes must be positive")
        }
        guard options.maxReaders > 0, options.maxReaders <= Int(UInt32.max) else {
            throw .invalidArgument("maxReaders must be between 1 and \(UInt32.max)")
        }
        guard options.maxTables >= 0, options.maxTables <= Int(UInt32.max) else {
            throw .invalidArgument("maxTables must be between 0 and \(UInt32.max)")
        }
        let mapLock = try ReadWriteLock()
        let writerLock = try WriterLock()
        let threadState = try ThreadTransactionState()
        if !options.readOnly {
            try Self.makeDirectories(path)
        }

        var created: OpaquePointer?
        let rc = mdb_env_create(&created)
        guard rc == 0, let env = created else { throw .lmdb(rc, "mdb_env_create") }

        // All C calls that can fail happen on the local `env` before any stored property is
        // set, so a failure closes it here and deinit (which would close it again) never runs.
        let maxKeySize: Int
        let pageSize: Int
        do throws(StorageError) {
            try StorageError.check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            try StorageError.check(
                mdb_env_set_maxreaders(env, UInt32(options.maxReaders)), "mdb_env_set_maxreaders")
            try StorageError.check(
                mdb_env_set_maxdbs(env, MDB_dbi(options.maxTables)), "mdb_env_set_maxdbs")
            // MDB_NOTLS: reader slots belong to transactions, not threads, because Swift
            // code (tasks) hops between threads and we may run several reads per thread.
            var flags = UInt32(MDB_NOTLS)
            if !options.durable { flags |= UInt32(MDB_NOSYNC) }
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if !options.readAhead { flags |= UInt32(MDB_NORDAHEAD) }
            try StorageError.check(
                mdb_env_open(env, path, flags, mdb_mode_t(options.fileMode)), "mdb_env_open(\(path))")
            // A crashed process leaves its reader slots pinning old pages; clear them now.
            var dead: Int32 = 0
            try StorageError.check(mdb_reader_check(env, &dead), "mdb_reader_check")
            maxKeySize = Int(mdb_env_get_maxkeysize(env))
            var stat = MDB_stat()
            try StorageError.check(mdb_env_stat(env, &stat), "mdb_env_stat")
            pageSize = Int(stat.ms_psize)
        } catch {
            mdb_env_close(env)
            throw error
        }

        self.path = path
        self.options = options
        self.maxKeySize = maxKeySize
        self.handle = env
        self.pageSize = pageSize
        self.mapLock = mapLock
        self.writerLock = writerLock
        self.threadState = threadState
        self.tables = Mutex([:])
        self.id = Self.nextID.add(1, ordering: .relaxed).oldValue
    }

    deinit {
        // LMDB closes every table handle and frees reader slots with the environment.
        mdb_env_close(handle)
    }

    // MARK: Tables

    /// Opens the named table, creating it if missing (unless the environment is read-only).
    ///
    /// Handles are cached: later calls with the same name return the same value without
    /// touching LMDB. Call this at start-up, outside any transaction: it runs its own
    /// transaction and throws `.invalidArgument` if the calling thread is inside one. Read
    /// transactions that began before a table was first created cannot see it.
    ///
    /// - Throws: `.invalidArgument` if the name was already opened with other options;
    ///   `.lmdb` with `MDB_INCOMPATIBLE` if the stored table has other options,
    ///   `MDB_NOTFOUND` if a read-only environment lacks the table, `MDB_DBS_FULL` past
    ///   `Options.maxTables`.
    ///
    /// `postings` makes the table one of posting blocks (``PostingBlock``). LMDB does not
    /// record it: every opener of the table must pass the same layout.
    public func table(
        _ name: String, options tableOptions: LMDBTable.Options = [], postings: PostingLayout? = nil
    ) throws(StorageError) -> LMDBTable {
        if postings != nil, tableOptions.contains(.dupSort) {
            throw .invalidArgument("table \(name): posting blocks need a plain table")
        }
        if let cached = tables.withLock({ $0[name] }) {
            guard cached.options == tableOptions, cached.postings == postings else {
                throw .invalidArgument("table \(name) is already open with other options")
            }
            return cached
        }
        guard threadState.current.depth == 0 else {
            throw .invalidArgument("table(_:) called inside a transaction; open tables first")
        }
        let flags = tableOptions.rawValue | (self.options.readOnly ? 0 : UInt32(MDB_CREATE))
        let dbi: MDB_dbi
        do {
            if self.options.readOnly {
                // mdb_dbi_open must not run in two transactions at once: borrow the writer lock.
                writerLock.lock()
                defer { writerLock.unlock() }
                dbi = try readTransaction(commit: true) { txn throws(StorageError) in
                    try Self.openDBI(txn.txnHandle(), name, flags, tableOptions)
                }
            } else {
                dbi = try write { txn throws(StorageError) in
                    try Self.openDBI(txn.txnHandle(), name, flags, tableOptions)
                }
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw .invalidArgument("unexpected error opening table \(name): \(error)")
        }
        let table = LMDBTable(name: name, options: tableOptions, postings: postings, dbi: dbi, environmentID: id)
        tables.withLock { $0[name] = table }
        return table
    }

    /// Opens a table and checks its stored options: LMDB itself silently adopts the
    /// stored flags, which would make a `.dupSort` table look plain (or the reverse).
    private static func openDBI(
        _ txn: OpaquePointer, _ name: String, _ flags: UInt32, _ expected: LMDBTable.Options
    ) throws(StorageError) -> MDB_dbi {
        var dbi = MDB_dbi()
        try StorageError.check(mdb_dbi_open(txn, name, flags, &dbi), "mdb_dbi_open(\(name))")
        var stored: UInt32 = 0
        try StorageError.check(mdb_dbi_flags(txn, dbi, &stored), "mdb_dbi_flags(\(name))")
        let persistent = UInt32(MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERKEY | MDB_INTEGERDUP | MDB_REVERSEKEY | MDB_REVERSEDUP)
        guard stored & persistent == expected.rawValue else {
            throw .lmdb(
                code: MDB_INCOMPATIBLE, operation: "mdb_dbi_open(\(name))",
                message: "table exists with flags 0x\(String(stored & persistent, radix: 16)), requested 0x\(String(expected.rawValue, radix: 16))")
        }
        return dbi
    }

    // MARK: Transactions

    /// Runs `body` in a read-only snapshot transaction and returns its result.
    ///
    /// The transaction, and every pointer obtained through it, is valid only until `body`
    /// returns; using the transaction afterwards throws `.invalidArgument`. The snapshot
    /// does not change while `body` runs, whatever writers commit meanwhile. Keep reads
    /// short: an open read pins old pages (the file grows) and delays map growth. Never wait
    /// inside `body` for a `write` running on another thread: if that write has to grow the
    /// map, it waits for this read to end.
    ///
    /// Errors thrown by `body` propagate unchanged; storage failures are `StorageError`.
    @discardableResult
    public func read<T>(_ body: (LMDBReadTransaction) throws -> T) throws -> T {
        try readTransaction(commit: false, body)
    }

    /// `read`, optionally committing instead of aborting at the end: table handles opened
    /// in a read-only transaction survive only a commit.
    private func readTransaction<T>(commit: Bool, _ body: (LMDBReadTransaction) throws -> T) throws -> T {
        let outer = threadState.current
        // A thread already inside a transaction already holds the map lock shared;
        // taking it again could block behind a waiting resizer.
        let holdsMapLock = outer.depth == 0
        if holdsMapLock { mapLock.lockShared() }
        defer { if holdsMapLock { mapLock.unlock() } }
        let txn = try beginTransaction(flags: UInt32(MDB_RDONLY), mayAdoptMapSize: holdsMapLock)
        threadState.current = .init(depth: outer.depth + 1, writing: outer.writing)
        let transaction = LMDBReadTransaction(environment: self, handle: txn)
        var ended = false
        defer {
            transaction.invalidate()
            if !ended { mdb_txn_abort(txn) }
            threadState.current = outer
        }
        let result = try body(transaction)
        if commit {
            ended = true
            try StorageError.check(mdb_txn_commit(txn), "mdb_txn_commit(read-only)")
        }
        return result
    }

    /// Runs `body` in a write transaction; commits if it returns, aborts if it throws.
    ///
    /// **The body may run more than once.** If LMDB reports `MDB_MAP_FULL` (from any call
    /// in the body, even one whose error the body caught, or from the commit), the
    /// transaction is aborted, the map is grown and `body` runs again from the start in a
    /// fresh transaction. So `body` must have no side effects outside the transaction
    /// (or must tolerate repeating them), and must not depend on state it mutates.
    ///
    /// Writers in this process run one at a time; other processes' writers are
    /// serialized by LMDB. Calling `write` from inside any transaction of this environment
    /// on the same thread throws `.invalidArgument` (it would deadlock).
    ///
    /// Errors thrown by `body` propagate unchanged (after the abort); storage failures are
    /// `StorageError`. When `maxMapSize` is reached the error's `isMapFull` is true.
    @discardableResult
    public func write<T>(_ body: (LMDBWriteTransaction) throws -> T) throws -> T {
        guard !options.readOnly else {
            throw StorageError.invalidArgument("write on an environment opened read-only")
        }
        let outer = threadState.current
        guard outer.depth == 0 else {
            throw StorageError.invalidArgument(
                outer.writing
                    ? "write called inside a write transaction of the same environment"
                    : "write called inside a read transaction of the same environment")
        }
        writerLock.lock()
        defer { writerLock.unlock() }
        threadState.current = .init(depth: 1, writing: true)
        defer { threadState.current = outer }

        while true {
            mapLock.lockShared()
            let txn: OpaquePointer
            do {
                txn = try beginTransaction(flags: 0, mayAdoptMapSize: true)
            } catch {
                mapLock.unlock()
                throw error
            }
            let transaction = LMDBWriteTransaction(
                environment: self, handle: txn, deferred: spareDeferred ?? DeferredWrites())
            spareDeferred = nil
            // Whatever happens to the transaction, its buffers go to the next one.
            defer {
                // Moved out, so the buffers have one owner when the next transaction grows them.
                var kept = transaction.deferred
                transaction.deferred = DeferredWrites()
                spareDeferred = kept.reusable()
            }
            let result: T
            do {
                result = try body(transaction)
                try transaction.writeAllDeferred()
            } catch {
                transaction.invalidate()
                mdb_txn_abort(txn)
                mapLock.unlock()
                if transaction.hitMapFull {
                    try growMap()
                    continue
                }
                throw error
            }
            transaction.invalidate()
            if transaction.hitMapFull {
                // The body swallowed MDB_MAP_FULL; the transaction is poisoned anyway.
                mdb_txn_abort(txn)
                mapLock.unlock()
                try growMap()
                continue
            }
            // mdb_txn_commit frees the transaction even when it fails: no abort after it.
            let rc = mdb_txn_commit(txn)
            mapLock.unlock()
            if rc == MDB_MAP_FULL {
                try growMap()
                continue
            }
            try StorageError.check(rc, "mdb_txn_commit")
            return result
        }
    }

    /// Begins a transaction with the map lock held shared by the caller, and returns with
    /// it still held (also when throwing).
    ///
    /// MDB_MAP_RESIZED means another process grew the map past ours; adopting its size
    /// needs the lock exclusively, which is impossible when this thread is nested inside
    /// another transaction, so then the error is thrown instead.
    private func beginTransaction(flags: UInt32, mayAdoptMapSize: Bool) throws(StorageError) -> OpaquePointer {
        var attempts = 0
        while true {
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, flags, &txn)
            if rc == 0, let txn { return txn }
            if rc == MDB_MAP_RESIZED, mayAdoptMapSize, attempts < 8 {
                attempts += 1
                mapLock.unlock()
                let adopted = setMapSizeExclusively(0)
                mapLock.lockShared()
                try StorageError.check(adopted, "mdb_env_set_mapsize(0)")
                continue
            }
            throw .lmdb(rc == 0 ? MDB_BAD_TXN : rc, "mdb_txn_begin")
        }
    }

    private func setMapSizeExclusively(_ size: Int) -> Int32 {
        mapLock.lockExclusive()
        defer { mapLock.unlock() }
        return mdb_env_set_mapsize(handle, size)
    }

    /// Grows the map: doubling, by at most `maxGrowthStep`, up to `maxMapSize`. Runs with
    /// the map lock exclusive, i.e. with no transaction of this process open, as
    /// `mdb_env_set_mapsize` requires. Called with the writer lock held, so no other
    /// writer in this process can race it.
    private func growMap() throws(StorageError) {
        mapLock.lockExclusive()
        defer { mapLock.unlock() }
        var info = MDB_envinfo()
        try StorageError.check(mdb_env_info(handle, &info), "mdb_env_info")
        let current = info.me_mapsize
        let limit = max(options.maxMapSize, options.mapSize)
        guard current < limit else {
            throw .lmdb(
                code: MDB_MAP_FULL, operation: "write",
                message: "map is full at maxMapSize (\(limit) bytes)")
        }
        var next = current + min(current, options.maxGrowthStep)
        next = (next + pageSize - 1) / pageSize * pageSize
        next = min(next, limit)
        try StorageError.check(mdb_env_set_mapsize(handle, next), "mdb_env_set_mapsize(\(next))")
    }

    // MARK: Maintenance

    /// Flushes committed data to disk. Needed only with `Options.durable == false`
    /// (otherwise every commit already syncs); `force` also waits for an
    /// asynchronous flush to finish.
    public func sync(force: Bool = true) throws(StorageError) {
        try StorageError.check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
    }

    /// Whether the environment holds a table named `name`, without creating it: the
    /// table is looked up in a read transaction that is then aborted, which closes the
    /// handle it opened (lmdb.h, `mdb_dbi_open`). Call outside any transaction.
    public func hasTable(_ name: String) throws(StorageError) -> Bool {
        if tables.withLock({ $0[name] }) != nil { return true }
        guard threadState.current.depth == 0 else {
            throw .invalidArgument("hasTable(_:) called inside a transaction")
        }
        // mdb_dbi_open must not run in two transactions at once: borrow the writer lock.
        writerLock.lock()
        defer { writerLock.unlock() }
        do {
            return try readTransaction(commit: false) { txn throws(StorageError) in
                var dbi: MDB_dbi = 0
                let rc = mdb_dbi_open(try txn.txnHandle(), name, 0, &dbi)
                if rc == MDB_NOTFOUND { return false }
                try StorageError.check(rc, "mdb_dbi_open(\(name))")
                return true
            }
        } catch let error as StorageError {
            throw error
        } catch {
            throw .invalidArgument("unexpected error looking up table \(name): \(error)")
        }
    }

    /// Whether each commit flushes to disk from now on (`MDB_NOSYNC` off or on), for
    /// this handle only. An environment committed without flushing keeps atomicity and
    /// consistency across a crash of the process (the pages are in the OS's cache), not
    /// across a crash of the machine: then its file may be torn, and LMDB has no page
    /// checksums to tell. Only for data that can be made again (views of a log).
    public func setSyncOnCommit(_ sync: Bool) throws(StorageError) {
        try StorageError.check(mdb_env_set_flags(handle, UInt32(MDB_NOSYNC), sync ? 0 : 1), "mdb_env_set_flags")
    }

    /// Current map size and usage. Safe to call from any thread at any time.
    public func info() throws(StorageError) -> LMDBEnvironmentInfo {
        var info = MDB_envinfo()
        try StorageError.check(mdb_env_info(handle, &info), "mdb_env_info")
        var stat = MDB_stat()
        try StorageError.check(mdb_env_stat(handle, &stat), "mdb_env_stat")
        return LMDBEnvironmentInfo(
            mapSize: info.me_mapsize,
            lastPageNumber: info.me_last_pgno,
            lastTransactionID: info.me_last_txnid,
            maxReaders: Int(info.me_maxreaders),
            readersUsed: Int(info.me_numreaders),
            pageSize: Int(stat.ms_psize),
            tableCount: stat.ms_entries)
    }

    /// Releases reader slots held by processes that no longer exist and returns how many
    /// were freed. Done at open; call it periodically if other processes may crash.
    @discardableResult
    public func readerCheck() throws(StorageError) -> Int {
        var dead: Int32 = 0
        try StorageError.check(mdb_reader_check(handle, &dead), "mdb_reader_check")
        return Int(dead)
    }

    /// Writes a consistent copy of the environment into directory `destination`
    /// (created if missing; it must not already hold a `data.mdb`). Writers may continue
    /// meanwhile; the copy reflects one committed snapshot. `compact` omits free pages and
    /// renumbers pages, making a smaller file at some CPU cost (`MDB_CP_COMPACT`).
    ///
    /// Must not be called from inside a transaction on this thread (`.invalidArgument`).
    /// Map growth waits until the copy finishes.
    public func copy(to destination: String, compact: Bool = false) throws(StorageError) {
        guard threadState.current.depth == 0 else {
            throw .invalidArgument("copy(to:) called inside a transaction")
        }
        try Self.makeDirectories(destination)
        // mdb_env_copy2 runs its own read transaction: hold the map lock like any reader.
        mapLock.lockShared()
        defer { mapLock.unlock() }
        let flags = compact ? UInt32(MDB_CP_COMPACT) : 0
        try StorageError.check(mdb_env_copy2(handle, destination, flags), "mdb_env_copy2(\(destination))")
        // LMDB creates the copy 0666 less the umask: a copy holds what the original does.
        try FilePermissions.set(FilePermissions.file, on: destination + "/data.mdb")
    }

    /// Writes a consistent copy of the environment's data file to the open file
    /// `descriptor`, from its current offset, in order and with plain `write(2)`
    /// calls; returns when the copy is written. A reader of the same file may follow
    /// the copy as it grows. Otherwise as ``copy(to:compact:)``: one committed
    /// snapshot, writers continue meanwhile, map growth waits until the copy ends.
    ///
    /// Must not be called from inside a transaction on this thread (`.invalidArgument`).
    /// Does not close or sync `descriptor`.
    public func copy(toDescriptor descriptor: Int32, compact: Bool = false) throws(StorageError) {
        guard threadState.current.depth == 0 else {
            throw .invalidArgument("copy(toDescriptor:) called inside a transaction")
        }
        mapLock.lockShared()
        defer { mapLock.unlock() }
        let flags = compact ? UInt32(MDB_CP_COMPACT) : 0
        try StorageError.check(mdb_env_copyfd2(handle, descriptor, flags), "mdb_env_copyfd2")
    }

    // MARK: Helpers for transactions

    /// The error for a key LMDB would reject, checked before calling it so the
    /// transaction is not poisoned.
    func keyError(_ count: Int) -> StorageError? {
        if count == 0 { return .emptyKey }
        if count > maxKeySize { return .keyTooLarge(count) }
        return nil
    }

    /// `mkdir -p`: creates each missing component of `path`, private to its owner
    /// (``FilePermissions/directory``).
    private static func makeDirectories(_ path: String) throws(StorageError) {
        guard !path.isEmpty else { throw .invalidArgument("empty path") }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, mode_t(FilePermissions.directory)) != 0 {
                let code = errno
                guard code == EEXIST else { throw .lmdb(code, "mkdir(\(prefix))") }
            }
            prefix += "/"
        }
    }
}
