import Hummingbird
import NIOCore

/// Hummingbird's basic request context, and the connection the request came on: its
/// peer's address is what the per-address rate limit counts, and its pipeline holds
/// the ``HangUpHandler`` that tells a long poll its client has gone.
struct CumulusRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The request's connection.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
