#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What transactions of one environment the *current thread* is inside, kept in a
/// pthread thread-specific slot.
///
/// Needed because transactions nest on a thread in ways that would otherwise deadlock:
/// a nested read must not take the map lock again (a waiting resizer would block it on
/// some platforms), and a write inside any transaction must be refused (the writer could
/// wait for the map lock this very thread holds shared). Transactions are synchronous
/// closures, so thread identity is stable for their whole extent.
final class ThreadTransactionState: @unchecked Sendable {
    // @unchecked: the key is immutable after init; each thread touches only its own slot.
    private let key: pthread_key_t

    struct State: Equatable {
        /// Number of transactions (read or write) open on this thread.
        var depth: Int
        /// Whether one of them is a write transaction.
        var writing: Bool
    }

    init() throws(StorageError) {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key, nil)
        guard rc == 0 else { throw .lmdb(rc, "pthread_key_create") }
        self.key = key
    }

    deinit {
        pthread_key_delete(key)
    }

    var current: State {
        get {
            let raw = Int(bitPattern: pthread_getspecific(key))
            return State(depth: raw >> 1, writing: raw & 1 == 1)
        }
        set {
            let raw = (newValue.depth << 1) | (newValue.writing ? 1 : 0)
            pthread_setspecific(key, UnsafeRawPointer(bitPattern: raw))
        }
    }
}
