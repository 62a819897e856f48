import Foundation

/// A unique path under the system temporary directory, for one test's files: a data
/// directory, a file, or a folder holding several.
///
/// Nothing is made at ``path``: what the test makes there is removed by ``remove()``,
/// which a test calls when it is done (`defer { directory.remove() }`) and a world
/// holding one calls from its `deinit`. Each test takes its own, because tests run in
/// parallel and one process must never open one LMDB environment twice. The path may
/// be handed to a child process as it is.
public struct TemporaryDirectory: Sendable {
    /// The path: `cumulus-<label>-<UUID>` in the system temporary directory; nothing
    /// is there until the test makes it.
    public let path: String

    /// A new unique path named after `label` (its letters, digits and hyphens; by
    /// default the calling function's name).
    public init(_ label: String = #function) {
        let safe = label.filter { $0.isLetter || $0.isNumber || $0 == "-" }
        path = NSTemporaryDirectory() + "cumulus-\(safe)-\(UUID().uuidString)"
    }

    /// The path of `name` inside the directory (nothing is made).
    public func appending(_ name: String) -> String {
        path + "/" + name
    }

    /// Makes the directory (and any missing parents), for a test that puts files in it
    /// before anything else does.
    public func create() throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Removes whatever is at the path, directory or file; nothing if nothing is.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Runs `body` with the path of a new temporary directory named after `label`,
    /// and removes whatever `body` made there afterwards.
    public static func with<T>(_ label: String = #function, _ body: (String) throws -> T) throws -> T {
        let directory = TemporaryDirectory(label)
        defer { directory.remove() }
        return try body(directory.path)
    }
}
