#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The modes Cumulus creates its files and directories with, and the check a server
/// makes of them at start: the one place these facts live.
///
/// A data directory holds every record, the server secret that signs change tokens and
/// cursors, and the hashes of every credential; a replay, a checkpoint or a snapshot
/// holds the same. Other local users must not read them, so directories are created
/// 0700 and files 0600 (a finished replay, which must not change, 0400), whatever the
/// process's umask allows beyond that.
public enum FilePermissions {
    /// Directories Cumulus creates: data directories, replays, checkpoints, snapshots.
    public static let directory: UInt16 = 0o700
    /// Files Cumulus creates: `data.mdb`, `lock.mdb`, snapshots, audit exports.
    public static let file: UInt16 = 0o600
    /// A finished replay's `data.mdb`, which nothing may write again.
    public static let readOnlyFile: UInt16 = 0o400

    /// The bits that let anyone but the owner in.
    static let othersBits: mode_t = 0o077

    /// Sets `path`'s mode to `mode` (`chmod`); throws `StorageError.lmdb` with `errno`.
    public static func set(_ mode: UInt16, on path: String) throws(StorageError) {
        guard chmod(path, mode_t(mode)) == 0 else { throw .lmdb(errno, "chmod(\(path))") }
    }

    /// A line naming the file at `path` and the command that tightens it when its group
    /// or other users may use it (a file holding a secret); empty when private or missing.
    public static func looserThanPrivate(file path: String) -> [String] {
        finding(path, wanted: file).map { [$0] } ?? []
    }

    /// One line per item of the data directory at `path` (the directory itself, its
    /// `data.mdb` and `lock.mdb`) that its group or other users may use, naming the mode
    /// and the command that tightens it; empty when all are private. What is missing
    /// is not reported.
    public static func looserThanPrivate(dataDirectory path: String) -> [String] {
        [(path, directory), (path + "/data.mdb", file), (path + "/lock.mdb", file)].compactMap { finding($0, wanted: $1) }
    }

    /// The finding for one item, or `nil` when it is private or missing.
    private static func finding(_ item: String, wanted: UInt16) -> String? {
        var info = stat()
        guard stat(item, &info) == 0 else { return nil }
        let mode = info.st_mode & 0o777
        guard mode & othersBits != 0 else { return nil }
        return "\(item) is mode \(String(mode, radix: 8)): other local users can use it; "
            + "run `chmod \(String(wanted, radix: 8)) \(item)`"
    }
}
