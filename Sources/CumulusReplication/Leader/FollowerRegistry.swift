import Foundation
import Synchronization

/// What a leader knows of its followers: the position each last reported and the
/// streams each has open. Kept in memory; a follower reports again within a second
/// of a restart.
final class FollowerRegistry: Sendable {
    struct Entry: Sendable {
        var applied: UInt64 = 0
        var reportedAt = ContinuousClock.now
        var openStreams = 0
    }

    /// Most followers remembered; names beyond it replace the longest silent one,
    /// so a client inventing names cannot grow the leader's memory.
    static let capacity = 256

    private let entries = Mutex<[String: Entry]>([:])
    /// Told after each change (outside the lock): semi-synchronous commit waits on it.
    private let observer = Mutex<(@Sendable () -> Void)?>(nil)

    /// Calls `body` after every later change.
    func observe(_ body: (@Sendable () -> Void)?) { observer.withLock { $0 = body } }

    func streamOpened(_ name: String, at position: UInt64) {
        update(name) {
            $0.openStreams += 1
            $0.applied = max($0.applied, position)
        }
    }

    func streamClosed(_ name: String) {
        update(name) { $0.openStreams = max(0, $0.openStreams - 1) }
    }

    func report(_ name: String, applied: UInt64) {
        update(name) {
            // Reports may arrive out of order; a position never goes back.
            $0.applied = max($0.applied, applied)
            $0.reportedAt = .now
        }
    }

    func snapshot() -> [(name: String, entry: Entry)] {
        entries.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.name < $1.name }
    }

    private func update(_ name: String, _ change: (inout Entry) -> Void) {
        entries.withLock { entries in
            if entries[name] == nil, entries.count >= Self.capacity,
                let oldest = entries.min(by: { $0.value.reportedAt < $1.value.reportedAt })?.key
            {
                entries[oldest] = nil
            }
            var entry = entries[name] ?? Entry()
            change(&entry)
            entry.reportedAt = max(entry.reportedAt, .now)
            entries[name] = entry
        }
        observer.withLock { $0 }?()
    }
}
