import Foundation

/// A snapshot written for a follower, read back in chunks for the HTTP response
/// and deleted once the stream is done with it (or dropped); then `released` runs,
/// which lets the leader write the next one.
public final class SnapshotFile: AsyncSequence, Sendable {
    /// The scratch directory holding the copy.
    public let directory: String
    /// The copy's size in bytes.
    public let size: Int
    let handle: FileHandle
    private let released: @Sendable () -> Void

    /// Bytes per chunk read.
    static let chunkSize = 1 << 20

    init(directory: String, released: @escaping @Sendable () -> Void = {}) throws {
        self.directory = directory
        self.released = released
        let path = directory + "/data.mdb"
        size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
    }

    deinit {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: directory)
        released()
    }

    /// Reads the file in order.
    public func makeAsyncIterator() -> Iterator { Iterator(file: self) }

    /// The chunks of the file.
    public struct Iterator: AsyncIteratorProtocol {
        let file: SnapshotFile

        /// The next chunk, or `nil` at the end.
        public mutating func next() async throws -> [UInt8]? {
            guard let data = try file.handle.read(upToCount: SnapshotFile.chunkSize), !data.isEmpty else { return nil }
            return Array(data)
        }
    }
}
