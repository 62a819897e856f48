import CumulusLog
import CumulusModel
import CumulusStorage
import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The asset files of a data directory (issue 17): content-addressed, beside the
/// LMDB files, in `DATA/assets/`. `Docs/LOG-FORMAT.md` §16 gives the layout.
///
/// ```
/// DATA/assets/lock                   flock'd around every rename, touch and delete
/// DATA/assets/incoming/<uuid>        uploads and fetches being written
/// DATA/assets/<h0h1>/<64 hex>        a file, named by the SHA-256 of its bytes
/// ```
///
/// **Invariants.** A file under its name holds exactly the bytes that hash to it:
/// it is written under `incoming/`, hashed as written, fsynced, renamed into place and
/// its directory fsynced, so a crash leaves either no file or the whole one, and a
/// receipt (``AssetReceipt``) is handed out only after that. The same bytes are
/// stored once: a second upload finds the name taken, deletes its copy and touches the
/// stored file's time instead, so the collector's grace (``AssetCollector``) counts
/// from the newest upload. Renames, touches and deletes take ``withLock(_:)`` — a
/// mutex within the process and `flock` between processes (`cumulus serve` and
/// `cumulus collect-assets` on one directory) — so the collector never deletes a
/// file an upload has just vouched for.
///
/// Nothing here knows which records refer to a file; the views count that
/// (`assetRefs`), and ``AssetCollector`` decides what may go.
public final class AssetStore: Sendable {
    /// `DATA/assets`.
    public let root: String
    /// Where uploads and fetches are written before they are renamed into place.
    static let incomingName = "incoming"
    /// The lock file's descriptor, behind the in-process half of the lock.
    private let lockFile: Mutex<Int32>

    /// The store of the data directory at `dataDirectory`, its directories created
    /// (0700) if missing. A read-only opener (`cumulus verify` on a copy) that cannot
    /// create them gets a store whose reads find nothing.
    public init(dataDirectory: String) throws {
        root = dataDirectory + "/" + DataLayout.assetDirectoryName
        for directory in [root, root + "/" + Self.incomingName] {
            if mkdir(directory, mode_t(FilePermissions.directory)) != 0, errno != EEXIST, errno != EROFS, errno != EACCES {
                throw Self.failure("create \(directory)")
            }
        }
        var descriptor = open(root + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, mode_t(FilePermissions.file))
        if descriptor < 0 { descriptor = open(root + "/lock", O_RDONLY | O_CLOEXEC) }
        lockFile = Mutex(descriptor)
    }

    deinit {
        lockFile.withLock { if $0 >= 0 { close($0) } }
    }

    /// Where the file named `checksum` lives (whether or not it is there).
    public func path(of checksum: AssetChecksum) -> String {
        let hex = checksum.hex
        return "\(root)/\(hex.prefix(2))/\(hex)"
    }

    /// Whether the file named `checksum` is stored.
    public func contains(_ checksum: AssetChecksum) -> Bool {
        access(path(of: checksum), F_OK) == 0
    }

    /// The stored file's size in bytes, or `nil` if it is not stored.
    public func size(of checksum: AssetChecksum) -> Int64? {
        var info = stat()
        guard stat(path(of: checksum), &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The stored file's bytes; `unknownItem` if it is not stored.
    public func read(_ checksum: AssetChecksum) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(of: checksum)) else {
            throw CumulusError(.unknownItem, "the asset \(checksum) is not stored on this node")
        }
        return Array(data)
    }

    /// Calls `body` with the stored file's bytes in chunks, in order; `unknownItem`
    /// if it is not stored (``AssetReader``).
    public func readChunks(_ checksum: AssetChecksum, _ body: ([UInt8]) throws -> Void) throws {
        let reader = try AssetReader(checksum, in: self)
        while let chunk = try reader.next() { try body(chunk) }
    }

    // MARK: - Writing

    /// Starts writing a file of at most `limit` bytes under `incoming/`.
    public func beginUpload(limit: Int64) throws -> AssetUpload {
        let path = "\(root)/\(Self.incomingName)/\(UUID.random().uuidString)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(FilePermissions.file))
        guard descriptor >= 0 else { throw Self.failure("create \(path)") }
        return AssetUpload(store: self, path: path, descriptor: descriptor, limit: limit)
    }

    /// Stores `bytes`, which must hash to `expected` (a follower's copy of its
    /// leader's file): `internalError` naming both if they do not, and nothing stored.
    public func install(_ bytes: [UInt8], as expected: AssetChecksum) throws {
        let upload = try beginUpload(limit: Int64(bytes.count))
        try upload.append(bytes)
        let stored = try upload.finish(expecting: expected)
        guard stored.checksum == expected else {
            throw CumulusError(.internalError, "the bytes fetched for asset \(expected) hash to \(stored.checksum)")
        }
    }

    /// Moves the finished, fsynced `temporary` to the name `checksum`, or deletes it
    /// and touches the stored file when the bytes are already there.
    func place(_ temporary: String, as checksum: AssetChecksum) throws {
        let target = path(of: checksum)
        let directory = String(target.dropLast(checksum.hex.count + 1))
        try withLock {
            if mkdir(directory, mode_t(FilePermissions.directory)) == 0 {
                try Self.syncDirectory(root)
            } else if errno != EEXIST {
                throw Self.failure("create \(directory)")
            }
            if access(target, F_OK) == 0 {
                unlink(temporary)
                // The newest upload restarts the grace: its receipt must find the file.
                guard utimensat(AT_FDCWD, target, nil, 0) == 0 else { throw Self.failure("touch \(target)") }
                return
            }
            guard rename(temporary, target) == 0 else { throw Self.failure("rename \(temporary) to \(target)") }
            try Self.syncDirectory(directory)
        }
    }

    /// Whether the file named `checksum` is stored, restarting its grace if it is
    /// (under the lock, so a collection round cannot delete it in between): a
    /// follower about to apply a record that refers to a file it already holds keeps
    /// the file as an upload would.
    public func retain(_ checksum: AssetChecksum) throws -> Bool {
        let target = path(of: checksum)
        return try withLock { utimensat(AT_FDCWD, target, nil, 0) == 0 }
    }

    // MARK: - Listing, checking, collecting

    /// Every stored file's name, in order. Files whose names are not checksums
    /// (none are made here) are left out.
    public func storedChecksums() throws -> [AssetChecksum] {
        let files = FileManager.default
        guard let fanOut = try? files.contentsOfDirectory(atPath: root) else { return [] }
        var found: [AssetChecksum] = []
        for directory in fanOut where directory.utf8.count == 2 {
            for name in (try? files.contentsOfDirectory(atPath: root + "/" + directory)) ?? [] {
                if let checksum = AssetChecksum(hex: name), name.hasPrefix(directory) { found.append(checksum) }
            }
        }
        return found.sorted()
    }

    /// Why the file named `checksum` is not what its name says — missing, or its
    /// bytes hash to something else — or `nil` when it is sound. Reads the whole file.
    public func problem(with checksum: AssetChecksum) -> String? {
        var hasher = SHA256()
        do {
            try readChunks(checksum) { hasher.update(data: $0) }
        } catch let error as CumulusError where error.code == .unknownItem {
            return "missing"
        } catch {
            return "unreadable: \(error)"
        }
        let actual = Array(hasher.finalize())
        guard actual == checksum.bytes else { return "its bytes hash to \(Hex.encode(actual))" }
        return nil
    }

    /// When the file named `checksum` was stored or last uploaded again, or `nil`.
    public func modificationDate(of checksum: AssetChecksum) -> Date? {
        var info = stat()
        guard stat(path(of: checksum), &info) == 0 else { return nil }
        return Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// Deletes the file named `checksum` if it was stored (or uploaded again) before
    /// `cutoff` and `stillUnreferenced` says so, both asked under the lock that
    /// uploads take to place or touch a file. Returns whether it deleted it.
    public func remove(
        _ checksum: AssetChecksum, ifStoredBefore cutoff: Date, stillUnreferenced: () throws -> Bool
    ) throws -> Bool {
        try withLock {
            guard let stored = modificationDate(of: checksum), stored < cutoff, try stillUnreferenced() else {
                return false
            }
            let target = path(of: checksum)
            guard unlink(target) == 0 else { throw Self.failure("delete \(target)") }
            try Self.syncDirectory(String(target.dropLast(checksum.hex.count + 1)))
            return true
        }
    }

    /// Deletes files left under `incoming/` before `cutoff`: uploads a crash or a
    /// broken connection interrupted. Returns how many.
    public func removeAbandonedUploads(before cutoff: Date) -> Int {
        let directory = root + "/" + Self.incomingName
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            var info = stat()
            let path = directory + "/" + name
            guard stat(path, &info) == 0, Double(info.st_mtim.tv_sec) < cutoff.timeIntervalSince1970 else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }

    /// Runs `body` holding the store's lock: the in-process mutex, then an exclusive
    /// `flock` on `assets/lock` (other processes on the same directory).
    public func withLock<T>(_ body: () throws -> T) throws -> T {
        try lockFile.withLock { descriptor in
            if descriptor >= 0 {
                while flock(descriptor, LOCK_EX) != 0 {
                    guard errno == EINTR else { throw Self.failure("lock \(root)/lock") }
                }
            }
            defer { if descriptor >= 0 { flock(descriptor, LOCK_UN) } }
            return try body()
        }
    }

    /// fsyncs a directory, so a rename or unlink in it survives a crash
    /// (``FileSync/directory(_:)``), failing as the store's other file errors do.
    static func syncDirectory(_ path: String) throws {
        do {
            try FileSync.directory(path)
        } catch {
            throw CumulusError(.internalError, "asset store: cannot sync \(path): \(error.description)")
        }
    }

    /// `internalError` naming what failed and `errno`'s text.
    static func failure(_ what: String) -> CumulusError {
        CumulusError(.internalError, "asset store: cannot \(what): \(String(cString: strerror(errno)))")
    }
}
