import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client sends a request too slowly: the head must be
/// complete within ``ServerLimits/requestHeadTimeout`` of the connection opening or
/// the previous response ending, and the body within
/// ``ServerLimits/requestBodyTimeout`` of the head. And one whose client reads its
/// response too slowly: the channel may stay unwritable (its outbound buffer past
/// NIO's high watermark) for at most ``ServerLimits/responseWriteTimeout``.
///
/// It sits after HTTP decoding, so it sees request parts, not bytes: a client
/// trickling one byte a second never completes a head, and the timer that started
/// when it connected closes it. The idle timeout alone would not, because the
/// trickle keeps the socket busy.
///
/// Why writability, not the response's parts: while the channel is unwritable,
/// Hummingbird's writer holds back the rest of the response, so a response that
/// stalls never writes its end into the pipeline, and no timer keyed to the end
/// would ever start (the idle timer does not run while a response is under way).
///
/// Thread rules: a channel handler, used only on its channel's event loop.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limits: ServerLimits
    private let onHit: @Sendable (ServerLimits.Hit) -> Void
    private var timer: Scheduled<Void>?
    /// Runs while the channel is unwritable: the client stopped reading.
    private var writeTimer: Scheduled<Void>?
    /// Whether a request's head has arrived and its response has not ended: from
    /// then until the response ends, the client owes nothing (the body's own timer
    /// stops at the request's end).
    private var inRequest = false

    init(limits: ServerLimits, onHit: @escaping @Sendable (ServerLimits.Hit) -> Void) {
        self.limits = limits
        self.onHit = onHit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(.requestHeadTimeout, context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if timer == nil, !inRequest { arm(.requestHeadTimeout, context: context) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        disarmWrite()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        disarmWrite()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            disarmWrite()
        } else if writeTimer == nil {
            let onHit = self.onHit
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            writeTimer = context.eventLoop.scheduleTask(in: TimeAmount(limits.responseWriteTimeout)) {
                onHit(.responseWriteTimeout)
                loopBound.value.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            inRequest = true
            arm(.requestBodyTimeout, context: context)
        case .body:
            break
        case .end:
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            inRequest = false
            // The next request's head is owed from now (keep-alive).
            arm(.requestHeadTimeout, context: context)
        }
        context.write(data, promise: promise)
    }

    private func arm(_ hit: ServerLimits.Hit, context: ChannelHandlerContext) {
        disarm()
        let after = hit == .requestBodyTimeout ? limits.requestBodyTimeout : limits.requestHeadTimeout
        let onHit = self.onHit
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: TimeAmount(after)) {
            onHit(hit)
            loopBound.value.close(promise: nil)
        }
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }

    private func disarmWrite() {
        writeTimer?.cancel()
        writeTimer = nil
    }
}
