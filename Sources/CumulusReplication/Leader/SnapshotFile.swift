import Foundation
import NIOCore

/// A snapshot written for a follower, read back in chunks for the HTTP response
/// and deleted once the stream is done with it (or dropped); then `released` runs,
/// which lets the leader write the next one.
public final class SnapshotFile: AsyncSequence, Sendable {
    /// The scratch directory holding the copy.
    public let directory: String
    /// The copy's size in bytes.
    public let size: Int
    private let descriptor: Int32
    private let released: @Sendable () -> Void

    /// Bytes per chunk read. Each chunk is read from the file straight into the buffer
    /// the response sends: a snapshot is the environment's whole size, so a copy per
    /// chunk (through `Data` and an array, as before) was most of its transfer time.
    static let chunkSize = 1 << 20

    init(directory: String, released: @escaping @Sendable () -> Void = {}) throws {
        self.directory = directory
        self.released = released
        let path = directory + "/data.mdb"
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.error(errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw Self.error(code)
        }
        self.descriptor = descriptor
        size = Int(status.st_size)
    }

    deinit {
        close(descriptor)
        try? FileManager.default.removeItem(atPath: directory)
        released()
    }

    /// Reads the file in order.
    public func makeAsyncIterator() -> Iterator { Iterator(file: self) }

    /// The chunks of the file.
    public struct Iterator: AsyncIteratorProtocol {
        let file: SnapshotFile
        var offset = 0

        /// The next chunk, or `nil` at the end.
        public mutating func next() async throws -> ByteBuffer? {
            guard offset < file.size else { return nil }
            let wanted = Swift.min(SnapshotFile.chunkSize, file.size - offset)
            var buffer = ByteBufferAllocator().buffer(capacity: wanted)
            let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { bytes in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes.prefix(wanted)), at: offset)
            }
            guard read > 0 else { return nil }
            offset += read
            return buffer
        }
    }

    private static func error(_ code: Int32) -> POSIXError { POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }

    /// Fills `bytes` from `offset` (fewer only at the end of the file).
    private func read(into bytes: UnsafeMutableRawBufferPointer, at offset: Int) throws -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var done = 0
        while done < bytes.count {
            let got = pread(descriptor, base + done, bytes.count - done, off_t(offset + done))
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw Self.error(errno) }
            if got == 0 { break }
            done += got
        }
        return done
    }
}
