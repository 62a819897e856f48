import CumulusModel
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A stored asset file opened for reading a chunk at a time: a download sends a
/// 50 MB file without holding it, awaiting the connection between chunks. Used by one
/// task; the file is closed when the reader goes away.
public final class AssetReader {
    private let descriptor: Int32
    /// The file's name.
    public let checksum: AssetChecksum

    /// Opens the file named `checksum` in `store`; `unknownItem` if it is not stored.
    public init(_ checksum: AssetChecksum, in store: AssetStore) throws {
        descriptor = open(store.path(of: checksum), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CumulusError(.unknownItem, "the asset \(checksum) is not stored on this node")
        }
        self.checksum = checksum
    }

    deinit { close(descriptor) }

    /// The next chunk of at most `limit` bytes, or `nil` at the end of the file.
    public func next(upTo limit: Int = 1 << 16) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, limit) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw AssetStore.failure("read asset \(checksum)") }
            if count == 0 { return nil }
            buffer.removeLast(limit - count)
            return buffer
        }
    }
}
