import CumulusLog
import CumulusStorage
import Foundation

/// The bytes of a snapshot: a data directory's two environments in one stream, as a
/// leader writes it and a follower unpacks it.
///
/// ```
/// snapshot  views environment (LMDB's compacting copy of DATA/data.mdb)
///           ‖ log environment (LMDB's compacting copy of DATA/log/data.mdb)
///           ‖ u64 big-endian length of the views part ‖ "CUMSNAP2"
/// ```
///
/// The views are copied first and the log after them, so the log holds at least every
/// commit the views applied: the follower's views, behind its log at most, catch up
/// on open. The lengths are known only once each copy has ended, hence a trailer
/// rather than a header: the stream is sent while it is written (``SnapshotFile``).
public enum SnapshotLayout {
    /// The trailer's last eight bytes.
    static let magic: [UInt8] = Array("CUMSNAP2".utf8)
    /// The trailer's length.
    static let trailerLength = 16

    /// Writes the snapshot of the data directory whose log is `store` to `descriptor`,
    /// from its current offset, in order.
    public static func write(_ store: LogStore, to descriptor: Int32) throws(StorageError) {
        let start = lseek(descriptor, 0, SEEK_CUR)
        try store.environment.copy(toDescriptor: descriptor, compact: true)
        let middle = lseek(descriptor, 0, SEEK_CUR)
        guard start >= 0, middle >= start else { throw .lmdb(code: errno, operation: "lseek(snapshot)", message: String(cString: strerror(errno))) }
        try store.logEnvironment.copy(toDescriptor: descriptor, compact: true)
        let trailer = BigEndian.bytes(UInt64(middle - start)) + magic
        let wrote = trailer.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        guard wrote == trailer.count else { throw .lmdb(code: errno, operation: "write(snapshot trailer)", message: String(cString: strerror(errno))) }
    }

    /// Turns the downloaded snapshot `file` into a data directory's two environments
    /// in `directory`: `data.mdb` and `log/data.mdb`. `file` is consumed (it becomes
    /// `data.mdb`). A file without a whole trailer, or whose trailer does not fit it,
    /// throws ``ReplicationError/badFrame(_:)`` before anything is moved.
    public static func unpack(_ file: String, into directory: String) throws {
        let descriptor = open(file, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw ReplicationError.refused("cannot open the snapshot \(file): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw ReplicationError.refused("cannot read the snapshot \(file)") }
        let size = Int(status.st_size)
        var trailer = [UInt8](repeating: 0, count: trailerLength)
        guard size >= trailerLength,
            trailer.withUnsafeMutableBytes({ pread(descriptor, $0.baseAddress, trailerLength, off_t(size - trailerLength)) })
                == trailerLength,
            Array(trailer[8...]) == magic, let viewsLength = BigEndian.decode(UInt64.self, from: trailer),
            viewsLength > 0, viewsLength < UInt64(size - trailerLength)
        else {
            throw ReplicationError.badFrame("the snapshot has no valid trailer: it is not whole, or from a leader of another storage format")
        }
        let logDirectory = DataLayout.logPath(directory)
        try FileManager.default.createDirectory(
            atPath: logDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: Int(FilePermissions.directory)])
        let logFile = logDirectory + "/data.mdb"
        let output = open(logFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(FilePermissions.file))
        guard output >= 0 else { throw ReplicationError.refused("cannot write \(logFile): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var offset = Int(viewsLength)
        let end = size - trailerLength
        var buffer = [UInt8](repeating: 0, count: 4 << 20)
        while offset < end {
            let count = try buffer.withUnsafeMutableBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                let read = pread(descriptor, base, min(bytes.count, end - offset), off_t(offset))
                guard read > 0 else { throw ReplicationError.refused("cannot read the snapshot \(file)") }
                do {
                    try LeaderClient.writeAll(UnsafeRawBufferPointer(start: base, count: read), to: output)
                } catch {
                    throw ReplicationError.refused("cannot write \(logFile): \(error)")
                }
                return read
            }
            offset += count
        }
        guard fsync(output) == 0, ftruncate(descriptor, off_t(viewsLength)) == 0, fsync(descriptor) == 0 else {
            throw ReplicationError.refused("cannot write the snapshot's environments: \(String(cString: strerror(errno)))")
        }
        let viewsFile = (directory.hasSuffix("/") ? directory : directory + "/") + "data.mdb"
        if file != viewsFile { try FileManager.default.moveItem(atPath: file, toPath: viewsFile) }
    }
}
