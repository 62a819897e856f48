#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// fsync of whole files and directories, for what must survive a crash of the
/// machine once a caller has recorded it: a views snapshot
/// (`LogStore.takeViewsSnapshot()`; LMDB's own copy does not flush what it writes),
/// an asset file's directory entry (`AssetStore`).
public enum FileSync {
    /// Flushes the file at `path` to stable storage.
    public static func file(_ path: String) throws(StorageError) {
        try sync(path, flags: O_RDONLY | O_CLOEXEC)
    }

    /// Flushes the directory at `path`, so a file created, renamed or removed in it
    /// stays so after a crash.
    public static func directory(_ path: String) throws(StorageError) {
        try sync(path, flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }

    private static func sync(_ path: String, flags: Int32) throws(StorageError) {
        let descriptor = open(path, flags)
        guard descriptor >= 0 else { throw failure("open", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("fsync", path) }
    }

    /// An errno failure, reported as LMDB's own are (``StorageError/lmdbCode`` holds errno).
    private static func failure(_ operation: String, _ path: String) -> StorageError {
        let code = errno
        return .lmdb(code: code, operation: "\(operation)(\(path))", message: String(cString: strerror(code)))
    }
}
