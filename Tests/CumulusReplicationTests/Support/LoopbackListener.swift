import Hummingbird

/// An HTTP server on a free loopback port that answers every request with `respond`:
/// the made-up leader a process test puts in front of a real `cumulus` follower (one
/// that alters frames, one that does not hold the secret). Serves until ``stop()``.
///
/// Its server runs as a task: with hundreds of tests on two cores that task can wait a
/// minute for a thread, so tests call ``waitUntilListening()`` before pointing a
/// process at it.
final class LoopbackListener: Sendable {
    /// Its base URL.
    let url: String
    private let server: Task<Void, any Error>

    init(_ respond: @escaping @Sendable (Request) async -> Response) {
        let port = NodeProcess.freePort()
        url = "http://127.0.0.1:\(port)"
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in
                // The probe of `waitUntilListening` is answered here, not recorded by `respond`.
                if request.uri.path == Self.probePath { return Response(status: .noContent) }
                return await respond(request)
            },
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)))
        server = Task { try await app.runService(gracefulShutdownSignals: []) }
    }

    static let probePath = "/.loopback-listener-probe"

    /// Returns once the server answers (it fails after `timeout`).
    func waitUntilListening(timeout: Duration = .seconds(180)) async throws {
        try await waitUntil("the listener at \(url) to answer", timeout: timeout) {
            (try? await TestHTTP.request(url + Self.probePath, timeout: .seconds(5)))?.status == 204
        }
    }

    /// Stops serving.
    func stop() { server.cancel() }
}
