import NIOCore
import NIOHTTPTypes
import Synchronization

/// Notices a client hanging up while its request is still being answered, so a long
/// poll can end at once and give back its place (``APILimits/longPollsPerUser``)
/// rather than wait out its minute for nobody.
///
/// Hummingbird lets a client half-close (`allowRemoteHalfClosure`) and keeps reading
/// the socket while a handler runs, so a client's close arrives as `inputClosed` (or,
/// after a reset, `channelInactive`) even though nothing is being written; this
/// handler turns either into its ``Signal``.
///
/// Thread rules: a channel handler, called on its channel's event loop; it keeps no
/// state of its own, only the signal, which any thread may watch.
final class HangUpHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    /// This connection's signal.
    let signal = Signal()

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { signal.fire() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        signal.fire()
        context.fireChannelInactive()
    }

    /// The signal of `channel`'s handler, if its pipeline has one.
    static func signal(of channel: any Channel) async -> Signal? {
        try? await channel.pipeline.handler(type: HangUpHandler.self).map(\.signal).get()
    }

    /// That a connection's client has gone, and what to do about it. An HTTP/1
    /// connection answers one request at a time, so there is one watcher at most.
    final class Signal: Sendable {
        private let state = Mutex<(fired: Bool, watcher: (@Sendable () -> Void)?)>((false, nil))

        /// Whether the client has gone.
        var fired: Bool { state.withLock { $0.fired } }

        /// Runs `action` when the client goes (at once, if it has), unless
        /// ``unwatch()`` comes first; replaces any earlier watcher.
        func watch(_ action: @escaping @Sendable () -> Void) {
            let now = state.withLock { state -> Bool in
                if state.fired { return true }
                state.watcher = action
                return false
            }
            if now { action() }
        }

        /// Forgets the watcher: its request is answered.
        func unwatch() { state.withLock { $0.watcher = nil } }

        fileprivate func fire() {
            let watcher = state.withLock { state in
                state.fired = true
                return state.watcher.take()
            }
            watcher?()
        }
    }
}
