import Testing
@testable import CumulusReplication

/// The one table both sides of the replication protocol read: a route's target parses
/// back to it, and an error a node answers with is the error its follower takes it for.
@Suite("Replication routes and statuses")
struct ReplicationRouteTests {
    @Test("every route's path parses back to it with its method, and with no other; query values are escaped")
    func routes() {
        for route in ReplicationRoute.allCases {
            #expect(ReplicationRoute(method: route.method, path: route.target()) == route)
            let other = route.method == "GET" ? "POST" : "GET"
            #expect(ReplicationRoute(method: other, path: route.target()) == nil)
        }
        #expect(ReplicationRoute(method: "GET", path: "/replication/nothing") == nil)
        #expect(ReplicationRoute(method: "GET", path: "/elsewhere/hello") == nil)
        #expect(Set(ReplicationRoute.allCases.filter(\.leaderOnly)) == [.configuration, .stream, .snapshot, .ack])
        #expect(
            ReplicationRoute.ack.target([(.follower, "node a&b=c"), (.applied, "7")])
                == "/replication/ack?follower=node%20a%26b%3Dc&applied=7")
        // Letters of other scripts are escaped too, byte by byte.
        #expect(ReplicationRoute.hello.target([(.follower, "nœud")]) == "/replication/hello?follower=n%C5%93ud")
    }

    @Test("an error answered by a node is read back as its kind; a leader's refusal as something to retry")
    func statuses() {
        let cases: [(ReplicationError, ReplicationError)] = [
            (.protocolViolation("p"), .protocolViolation("p")),
            (.diverged("d"), .diverged("d")),
            (.behindRetention("b"), .behindRetention("b")),
            (.staleEpoch("s"), .staleEpoch("s")),
            (.refused("r"), .unreachable("n cannot serve replication now: r")),
            (.unreachable("u"), .unreachable("n cannot serve replication now: u")),
            (.badFrame("f"), .unreachable("HTTP 500: f")),
        ]
        for (sent, read) in cases {
            #expect(ReplicationError(status: sent.httpStatus, reason: sent.reason, node: "n") == read, "\(sent)")
        }
        // A session the node refuses is refused for good, not retried.
        #expect(ReplicationError(status: ReplicationRoute.wrongProofStatus, reason: "x", node: "n") == .refused("x"))
        #expect(ReplicationError(status: ReplicationRoute.unknownSessionStatus, reason: "x", node: "n") == .refused("x"))
        #expect(ReplicationError(status: 500, reason: "x", node: "n").isTransient)
    }
}
