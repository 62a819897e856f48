import HummingbirdCore

/// ``ServerLimits/maxConnections`` as Hummingbird's accept gate: the server stops
/// accepting while this many connections are open, and each time it has to stop,
/// `/metrics` counts a `connections` hit.
///
/// Thread rules: Hummingbird calls it on the listening channel's event loop only.
struct ConnectionLimit: AvailableConnectionsDelegate {
    let maxConnections: Int
    let onHit: @Sendable (ServerLimits.Hit) -> Void
    private var open = 0

    init(maxConnections: Int, onHit: @escaping @Sendable (ServerLimits.Hit) -> Void) {
        self.maxConnections = maxConnections
        self.onHit = onHit
    }

    mutating func connectionOpened() {
        open += 1
        if open == maxConnections { onHit(.connections) }
    }

    mutating func connectionClosed() { open -= 1 }

    func isAcceptingNewConnections() -> Bool { open < maxConnections }
}
