#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_rwlock_t` guarding the LMDB map against resizing.
///
/// Every transaction in the process holds it shared; `mdb_env_set_mapsize` runs with it
/// held exclusively, because LMDB requires that no transaction be active in the process
/// while the map is remapped.
///
/// The lock lives in allocated memory: pthread objects must not move, and Swift may move
/// stored properties. Lock and unlock must happen on the same thread, which holds because
/// every user is a synchronous closure.
final class ReadWriteLock: @unchecked Sendable {
    // @unchecked: the pointer is written once in init and only passed to pthread
    // functions, which are themselves thread-safe.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() throws(StorageError) {
        lock = .allocate(capacity: 1)
        let rc = pthread_rwlock_init(lock, nil)
        guard rc == 0 else {
            lock.deallocate()
            throw .lmdb(rc, "pthread_rwlock_init")
        }
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func lockShared() { pthread_rwlock_rdlock(lock) }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}
