import Synchronization

/// The open SSE notification streams, counted per user and in all, so one client (any
/// holder of a user's web auth token) cannot hold an unbounded number open
/// (issue 15). A stream holds its place through a ``Slot``, released when the stream
/// is, however it ends.
final class NotificationStreams: Sendable {
    private let counts = Mutex<(inAll: Int, perUser: [String: Int])>((0, [:]))

    /// A place for one of `user`'s streams, or `nil` if `user` holds `perUser` or the
    /// server `inAll` already (``APILimits``).
    func open(for user: String, perUser: Int, inAll: Int, metrics: ServerMetrics?) -> Slot? {
        let admitted = counts.withLock { counts -> Bool in
            guard counts.inAll < inAll, counts.perUser[user, default: 0] < perUser else { return false }
            counts.inAll += 1
            counts.perUser[user, default: 0] += 1
            return true
        }
        guard admitted else { return nil }
        metrics?.streamOpened()
        return Slot(streams: self, user: user, metrics: metrics)
    }

    fileprivate func close(for user: String) {
        counts.withLock { counts in
            counts.inAll -= 1
            let left = counts.perUser[user, default: 1] - 1
            counts.perUser[user] = left > 0 ? left : nil
        }
    }

    /// One open stream's place; gives it back when released.
    final class Slot: Sendable {
        let streams: NotificationStreams
        let user: String
        let metrics: ServerMetrics?

        fileprivate init(streams: NotificationStreams, user: String, metrics: ServerMetrics?) {
            self.streams = streams
            self.user = user
            self.metrics = metrics
        }

        deinit {
            streams.close(for: user)
            metrics?.streamClosed()
        }
    }
}
