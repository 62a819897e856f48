import Foundation

/// Buffered line output to a file handle: exports write millions of short lines,
/// and a system call per line would cost more than formatting them.
public final class LineWriter {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private let capacity: Int

    /// Writes to `handle` in chunks of about `capacity` bytes.
    public init(_ handle: FileHandle, capacity: Int = 1 << 16) {
        self.handle = handle
        self.capacity = capacity
        buffer.reserveCapacity(capacity + 1024)
    }

    /// Appends `line` and a line feed.
    public func write(_ line: String) throws {
        buffer.append(contentsOf: line.utf8)
        buffer.append(0x0A)
        if buffer.count >= capacity { try flush() }
    }

    /// Appends a line written by `body` straight into the buffer, and a line feed.
    public func writeLine(_ body: (inout [UInt8]) -> Void) throws {
        body(&buffer)
        buffer.append(0x0A)
        if buffer.count >= capacity { try flush() }
    }

    /// Writes out what is buffered.
    public func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    deinit { try? flush() }
}
