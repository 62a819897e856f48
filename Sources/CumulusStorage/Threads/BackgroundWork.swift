import Dispatch
import Synchronization

/// One piece of synchronous work started on another thread, whose result a
/// synchronous caller takes later: how a batch loop prepares batch *n* + 1 (reads,
/// decodes, derives) while its own thread writes batch *n*.
///
/// The work runs on a Dispatch queue, not in Swift's cooperative pool: it blocks (LMDB
/// reads, CPU-bound loops of milliseconds), and the loops that start it are themselves
/// synchronous code that may be running on a pool thread.
public final class BackgroundWork<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` now, on another thread.
    public init(_ body: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }
    }

    /// The loop of a batch pipeline: hands each step's value to `consume` on this
    /// thread, having started the step after it (`next`, given the value; `nil` when
    /// there is none) first, so the two overlap. Starts with `first`. Never returns or
    /// throws with a step still running: its caller may close what the step reads.
    public static func pipeline(
        first: BackgroundWork?, next: (Value) -> BackgroundWork?, consume: (Value) throws -> Void
    ) throws {
        var pending = first
        defer { _ = try? pending?.value() }
        while let work = pending {
            let value = try work.value()
            pending = next(value)
            try consume(value)
        }
    }

    /// Waits for the work to finish and returns what it returned, or throws what it
    /// threw. Call once: the result is handed over, not kept, so its lifetime is the
    /// caller's alone.
    public func value() throws -> Value {
        done.wait()
        // Passed on, so a second call finds the result taken instead of waiting forever.
        done.signal()
        // Set before the signal, so present once the wait returns (unless taken).
        let outcome = result.withLock { result in
            defer { result = nil }
            return result
        }
        guard let outcome else { throw StorageError.invalidArgument("the result of background work was taken already") }
        return try outcome.get()
    }
}
