#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_mutex_t` serializing this process's writers.
///
/// LMDB already serializes writers with its own robust mutex, but waiting on that mutex
/// while holding the map lock shared would deadlock against a writer that needs the map
/// lock exclusively to grow the map. Taking this lock first (and never while holding the
/// map lock) gives every writer one consistent lock order.
///
/// `Synchronization.Mutex` is not used because its `withLock` returns `sending` results,
/// which a generic non-`Sendable` transaction result cannot satisfy.
final class WriterLock: @unchecked Sendable {
    // @unchecked: the pointer is written once in init and only passed to pthread functions.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() throws(StorageError) {
        mutex = .allocate(capacity: 1)
        let rc = pthread_mutex_init(mutex, nil)
        guard rc == 0 else {
            mutex.deallocate()
            throw .lmdb(rc, "pthread_mutex_init")
        }
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
