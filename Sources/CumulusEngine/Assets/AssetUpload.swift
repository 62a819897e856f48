import CumulusModel
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// One file being written into an ``AssetStore``: hashed and size-checked as its
/// bytes arrive, so a 50 MB upload is never held whole and one past the limit is
/// refused at the first byte over it.
///
/// Used by one task at a time (an upload's request handler). ``finish(expecting:)``
/// makes it durable and names it; dropping it unfinished deletes what was written.
public final class AssetUpload {
    private let store: AssetStore
    private let path: String
    private var descriptor: Int32
    private var hasher = SHA256()
    /// Bytes written so far.
    public private(set) var size: Int64 = 0
    /// The most bytes the file may hold.
    public let limit: Int64

    init(store: AssetStore, path: String, descriptor: Int32, limit: Int64) {
        self.store = store
        self.path = path
        self.descriptor = descriptor
        self.limit = limit
    }

    deinit { discard() }

    /// Appends `bytes`; `limitExceeded` (and the upload discarded) once the file would
    /// pass ``limit``.
    public func append(_ bytes: some Collection<UInt8>) throws {
        guard descriptor >= 0 else { throw CumulusError(.internalError, "the upload was already finished or discarded") }
        guard size + Int64(bytes.count) <= limit else {
            discard()
            throw CumulusError(.limitExceeded, "the asset is larger than \(limit) bytes, the most one asset may be")
        }
        let contiguous = Array(bytes)
        try contiguous.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var done = 0
            while done < buffer.count {
                let wrote = write(descriptor, base + done, buffer.count - done)
                if wrote < 0, errno == EINTR { continue }
                guard wrote > 0 else {
                    let failure = AssetStore.failure("write \(path)")
                    discard()
                    throw failure
                }
                done += wrote
            }
        }
        hasher.update(data: contiguous)
        size += Int64(contiguous.count)
    }

    /// Makes the file durable (fsync) and places it under its checksum, or finds the
    /// same bytes already stored; returns what was stored. With `expecting`, bytes
    /// hashing to anything else are discarded instead (a fetch from a leader).
    public func finish(expecting: AssetChecksum? = nil) throws -> StoredAsset {
        guard descriptor >= 0 else { throw CumulusError(.internalError, "the upload was already finished or discarded") }
        guard fsync(descriptor) == 0 else {
            let failure = AssetStore.failure("fsync \(path)")
            discard()
            throw failure
        }
        close(descriptor)
        descriptor = -1
        guard let checksum = AssetChecksum(bytes: Array(hasher.finalize())) else {
            unlink(path)
            throw CumulusError(.internalError, "SHA-256 gave a digest of the wrong length")
        }
        if let expecting, expecting != checksum {
            unlink(path)
            return StoredAsset(checksum: checksum, size: size)
        }
        do {
            try store.place(path, as: checksum)
        } catch {
            unlink(path)
            throw error
        }
        return StoredAsset(checksum: checksum, size: size)
    }

    /// Closes and deletes the file being written, if it is still open.
    public func discard() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
        unlink(path)
    }
}

/// A file an ``AssetStore`` holds: its name and size.
public struct StoredAsset: Sendable, Hashable {
    /// The SHA-256 of its bytes, its name.
    public let checksum: AssetChecksum
    /// Its size in bytes.
    public let size: Int64

    /// A stored file's description.
    public init(checksum: AssetChecksum, size: Int64) {
        self.checksum = checksum
        self.size = size
    }
}
