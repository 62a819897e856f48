import Hummingbird

/// An HTTP server on a free loopback port that answers every request with `respond`:
/// the made-up leader a process test puts in front of a real `cumulus` follower (one
/// that alters frames, one that does not hold the secret). Serves until ``stop()``.
final class LoopbackListener: Sendable {
    /// Its base URL.
    let url: String
    private let server: Task<Void, any Error>

    init(_ respond: @escaping @Sendable (Request) async -> Response) {
        let port = NodeProcess.freePort()
        url = "http://127.0.0.1:\(port)"
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await respond(request) },
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)))
        server = Task { try await app.runService(gracefulShutdownSignals: []) }
    }

    /// Stops serving.
    func stop() { server.cancel() }
}
