import CumulusModel
import Foundation

/// Reads a text file line by line in fixed-size chunks (constant memory whatever
/// the file's size), numbering lines from 1. A trailing `\r` is dropped.
public struct LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false
    /// The number of the last line returned.
    public private(set) var lineNumber = 0

    /// Opens `path`; `invalidArguments` if it cannot be read.
    public init(path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CumulusError(.invalidArguments, "cannot read \(path)")
        }
        self.handle = handle
    }

    /// The next line, or `nil` at the end of the file.
    public mutating func next() throws -> String? {
        while true {
            if let newline = buffer[position...].firstIndex(of: 0x0A) {
                var end = newline
                if end > position, buffer[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: buffer[position..<end], as: UTF8.self)
                position = newline + 1
                lineNumber += 1
                return line
            }
            if atEnd {
                guard position < buffer.count else { return nil }
                let line = String(decoding: buffer[position...], as: UTF8.self)
                position = buffer.count
                lineNumber += 1
                return line
            }
            buffer.removeFirst(position)
            position = 0
            let chunk = try handle.read(upToCount: 1 << 16) ?? Data()
            if chunk.isEmpty { atEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }
}
