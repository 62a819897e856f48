import Synchronization

/// Places for things a user holds open for a long time, counted per user and in all:
/// SSE notification streams, so one client (any holder of a user's web auth token)
/// cannot hold an unbounded number open (issue 15), and long polls, of which one user
/// held 100 (issue 40). A holder keeps its place through a ``Slot``, released when the
/// slot is, however the stream or poll ends.
final class UserSlots: Sendable {
    private let counts = Mutex<(inAll: Int, perUser: [String: Int])>((0, [:]))

    /// A place for one of `user`'s holders, or `nil` if `user` holds `perUser` or the
    /// server `inAll` already (``APILimits``). With `metrics`, the place is counted in
    /// its open-streams gauge while held.
    func open(for user: String, perUser: Int, inAll: Int, metrics: ServerMetrics?) -> Slot? {
        let admitted = counts.withLock { counts -> Bool in
            guard counts.inAll < inAll, counts.perUser[user, default: 0] < perUser else { return false }
            counts.inAll += 1
            counts.perUser[user, default: 0] += 1
            return true
        }
        guard admitted else { return nil }
        metrics?.streamOpened()
        return Slot(slots: self, user: user, metrics: metrics)
    }

    /// Places `user` holds now.
    func held(by user: String) -> Int {
        counts.withLock { $0.perUser[user, default: 0] }
    }

    fileprivate func close(for user: String) {
        counts.withLock { counts in
            counts.inAll -= 1
            let left = counts.perUser[user, default: 1] - 1
            counts.perUser[user] = left > 0 ? left : nil
        }
    }

    /// One held place; gives it back when released.
    final class Slot: Sendable {
        let slots: UserSlots
        let user: String
        let metrics: ServerMetrics?

        fileprivate init(slots: UserSlots, user: String, metrics: ServerMetrics?) {
            self.slots = slots
            self.user = user
            self.metrics = metrics
        }

        deinit {
            slots.close(for: user)
            metrics?.streamClosed()
        }
    }
}
