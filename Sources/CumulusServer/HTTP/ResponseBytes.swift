import NIOCore
import NIOHTTPTypes
import Synchronization

/// Bytes of response bodies handed to connections and not yet written to their
/// sockets, over all connections (``ServerLimits/maxResponseBufferBytes``).
///
/// **Why counted in the pipeline.** Hummingbird's writer returns once a body is handed
/// to the channel, not once it is sent: a reservation held by the response would be
/// given back while the bytes still sit in the channel's outbound buffer, where a
/// client that reads nothing keeps them. So ``Handler`` counts each body part from its
/// write until NIO completes that write (sent, or failed when the connection closed),
/// and the responder asks ``admits(_:)`` before it hands on a large answer. Parts of
/// at most 64 KiB are not counted: the connection limit bounds what they hold.
final class ResponseBytes: Sendable {
    private let pending = Atomic<Int>(0)
    /// The budget.
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Bytes handed on and not yet written.
    var inFlight: Int { pending.load(ordering: .relaxed) }

    /// Whether an answer of `count` bytes may be handed on: it fits beside what is in
    /// flight, or nothing is (so an answer larger than the whole budget is sent alone).
    func admits(_ count: Int) -> Bool {
        let now = inFlight
        return now == 0 || now + count <= limit
    }

    /// Counts a response's body parts while NIO holds them. One per connection.
    final class Handler: ChannelOutboundHandler, RemovableChannelHandler {
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart

        private let ledger: ResponseBytes

        init(_ ledger: ResponseBytes) { self.ledger = ledger }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            // Only parts the budget is about: small ones (most answers) go by without a
            // promise made and settled for each.
            guard case .body(let buffer) = unwrapOutboundIn(data),
                buffer.readableBytes > CumulusHTTPServer.unbudgetedResponseBytes
            else {
                context.write(data, promise: promise)
                return
            }
            let count = buffer.readableBytes
            let ledger = self.ledger
            ledger.pending.add(count, ordering: .relaxed)
            let written = promise ?? context.eventLoop.makePromise()
            written.futureResult.whenComplete { _ in ledger.pending.subtract(count, ordering: .relaxed) }
            context.write(data, promise: written)
        }
    }
}
