/// The commits of a log from a starting sequence on, waiting for new ones when it
/// runs out (``LogStore/tail(from:)``).
///
/// Pull-based: the iterator reads a batch only when the consumer asks for more, so a
/// slow consumer holds at most one batch in memory however far behind it is. It
/// ends (returns `nil`) only when the consuming task is cancelled; read errors, such
/// as a damaged frame, are thrown.
public struct LogTail: AsyncSequence, Sendable {
    /// Commits per read.
    public static let batchSize = 256

    let store: LogStore
    let next: UInt64

    /// An iterator starting at the tail's first sequence.
    public func makeAsyncIterator() -> Iterator {
        Iterator(store: store, next: next)
    }

    /// Reads batches and waits for commits.
    public struct Iterator: AsyncIteratorProtocol {
        let store: LogStore
        var next: UInt64
        var buffer: [Commit] = []
        var index = 0

        /// The next commit; waits for one if the log has none yet.
        public mutating func next() async throws -> Commit? {
            while true {
                if index < buffer.count {
                    defer { index += 1 }
                    return buffer[index]
                }
                if Task.isCancelled { return nil }
                buffer = try store.range(from: next, limit: LogTail.batchSize)
                index = 0
                if let last = buffer.last {
                    next = last.sequence + 1
                } else {
                    await store.waitForCommit(after: next - 1)
                }
            }
        }
    }
}
