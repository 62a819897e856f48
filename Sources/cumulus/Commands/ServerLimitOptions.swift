import ArgumentParser
import CumulusServer

/// `cumulus serve`'s limits on connections and slow clients (``ServerLimits``);
/// each default is the struct's, so the help and the code cannot disagree.
struct ServerLimitOptions: ParsableArguments {
    private static let defaults = ServerLimits()

    @Option(help: "Connections open at once; past it, new ones wait to be accepted.")
    var maxConnections = defaults.maxConnections
    @Option(help: "Seconds a connection may take to send a request head (from opening, or from its previous response).")
    var requestHeadTimeout = Int(defaults.requestHeadTimeout.components.seconds)
    @Option(help: "Seconds a request may take to send its body, from its head.")
    var requestBodyTimeout = Int(defaults.requestBodyTimeout.components.seconds)
    @Option(help: "Bytes of header fields one request may send.")
    var maxHeaderBytes = defaults.maxHeaderBytes
    @Option(help: "Bytes of request bodies held at once over all connections; past it, TRY_AGAIN_LATER.")
    var maxBodyBufferBytes = defaults.maxBodyBufferBytes
    @Option(help: "Seconds a connection with no request or response under way stays open.")
    var idleTimeout = Int(defaults.idleTimeout.components.seconds)

    func validate() throws {
        guard maxConnections >= 1 else { throw ValidationError("--max-connections is at least 1") }
        guard requestHeadTimeout >= 1, requestBodyTimeout >= 1, idleTimeout >= 1 else {
            throw ValidationError("timeouts are whole seconds, at least 1")
        }
        guard maxHeaderBytes >= 1_024 else { throw ValidationError("--max-header-bytes is at least 1024") }
        guard maxBodyBufferBytes >= 4 << 20 else {
            throw ValidationError("--max-body-buffer-bytes is at least 4194304 (one request's largest body)")
        }
    }

    /// The limits these options set.
    var limits: ServerLimits {
        var limits = ServerLimits()
        limits.maxConnections = maxConnections
        limits.requestHeadTimeout = .seconds(requestHeadTimeout)
        limits.requestBodyTimeout = .seconds(requestBodyTimeout)
        limits.maxHeaderBytes = maxHeaderBytes
        limits.maxBodyBufferBytes = maxBodyBufferBytes
        limits.idleTimeout = .seconds(idleTimeout)
        return limits
    }
}
