import Synchronization

/// Frames received from the leader and not yet applied: the hand-off between the
/// follower's network reader and its applier.
///
/// The applier takes everything that has arrived in one go, so while it applies
/// (one transaction, one fsync) the next batch grows with whatever the leader sent
/// meanwhile: batches are as large as the backlog, and a follower that falls behind
/// catches up with few, large transactions instead of one per message. The reader
/// waits when `maxBytes` are pending, so a slow disk holds memory bounded.
final class FrameInbox: Sendable {
    struct State: Sendable {
        var frames: [[UInt8]] = []
        var leaderHead: UInt64 = 0
        var bytes = 0
        var closed = false
        var failed = false
        var applier: CheckedContinuation<Void, Never>?
        var reader: CheckedContinuation<Void, Never>?
    }

    /// Most frame bytes pending before the reader waits.
    let maxBytes: Int
    private let state = Mutex(State())

    init(maxBytes: Int = 64 << 20) {
        self.maxBytes = maxBytes
    }

    /// Adds a message's frames; waits while the inbox is full. Returns `false` once
    /// the applier has failed (the reader should stop).
    func put(_ frames: [[UInt8]], leaderHead: UInt64) async -> Bool {
        let size = frames.reduce(0) { $0 + $1.count }
        while true {
            let (accepted, wake) = state.withLock { state -> (Bool?, CheckedContinuation<Void, Never>?) in
                if state.failed || state.closed { return (false, nil) }
                guard state.bytes == 0 || state.bytes + size <= maxBytes else { return (nil, nil) }
                state.frames += frames
                state.leaderHead = max(state.leaderHead, leaderHead)
                state.bytes += size
                defer { state.applier = nil }
                return (true, state.applier)
            }
            wake?.resume()
            if let accepted { return accepted }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.failed || state.closed || state.bytes == 0 || state.bytes + size <= maxBytes { return true }
                    state.reader = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Everything pending, waiting for some; `nil` once closed and empty.
    func take() async -> (frames: [[UInt8]], leaderHead: UInt64)? {
        while true {
            let (batch, done, wake) = state.withLock { state -> ((frames: [[UInt8]], leaderHead: UInt64)?, Bool, CheckedContinuation<Void, Never>?) in
                if !state.frames.isEmpty {
                    let batch = (state.frames, state.leaderHead)
                    state.frames = []
                    state.bytes = 0
                    defer { state.reader = nil }
                    return (batch, false, state.reader)
                }
                return (nil, state.closed || state.failed, nil)
            }
            wake?.resume()
            if let batch { return batch }
            if done { return nil }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if !state.frames.isEmpty || state.closed || state.failed { return true }
                    state.applier = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// No more frames will come: the applier finishes what is pending, then stops.
    func close() { finish { $0.closed = true } }

    /// The applier failed: the reader stops taking frames.
    func fail() { finish { $0.failed = true } }

    private func finish(_ change: (inout State) -> Void) {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            defer {
                state.applier = nil
                state.reader = nil
            }
            return [state.applier, state.reader].compactMap { $0 }
        }
        for continuation in waiting { continuation.resume() }
    }
}
