import Foundation
import Synchronization

/// Work run in the order it is submitted, one piece at a time, on a thread of its own:
/// for long, blocking work (a replay, a chain verify) that must neither hold a thread of
/// Swift's cooperative pool nor wait behind Dispatch's, whose few threads a busy process
/// can keep blocked for a minute (the console's jobs waited that long under the full
/// test suite). The thread starts when work arrives and ends when none is left.
public final class SerialThread: Sendable {
    private struct Pending {
        var work: [@Sendable () -> Void] = []
        var running = false
    }

    private let pending = Mutex(Pending())
    private let name: String

    /// A thread named `name` (as debuggers and `top -H` show it), not yet started.
    public init(name: String) { self.name = name }

    /// Runs `work` after everything submitted before it.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        let start = pending.withLock { pending -> Bool in
            pending.work.append(work)
            guard !pending.running else { return false }
            pending.running = true
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in drain() }
        thread.name = name
        thread.start()
    }

    private func drain() {
        while let next = pending.withLock({ pending -> (@Sendable () -> Void)? in
            guard !pending.work.isEmpty else {
                pending.running = false
                return nil
            }
            return pending.work.removeFirst()
        }) {
            next()
        }
    }
}
