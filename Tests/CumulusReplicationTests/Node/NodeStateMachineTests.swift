import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import Testing

/// Every transition of the node's state machine, without a socket, a clock or a
/// directory: each mode, each election event, each kind of failure.
@Suite struct NodeStateMachineTests {
    static let a = ClusterLeader(node: "a", url: "http://a:8765", epoch: 3)
    static let b = ClusterLeader(node: "b", url: "http://b:8765", epoch: 4)
    static let allFailures: [NodeStateMachine.Failure] = [
        .leaderGone("gone"), .diverged("fork"), .behindRetention("dropped"), .viewsTorn("torn"), .fatal("disk"),
    ]

    /// A cluster member, opened as a candidate.
    func member() -> NodeStateMachine {
        var machine = NodeStateMachine(mode: .cluster)
        machine.opened(epoch: 2)
        return machine
    }

    @Test func openingGivesEachModeItsRole() {
        let cases: [(NodeStateMachine.Mode, NodeStateMachine.State)] = [
            (.leader, .leading(epoch: 2)),
            (.follower(leaderURL: "http://l:1"), .following(leaderURL: "http://l:1", streaming: true)),
            (.readOnly, .readOnly),
            (.cluster, .candidate(streaming: nil)),
        ]
        for (mode, expected) in cases {
            var machine = NodeStateMachine(mode: mode)
            #expect(machine.state == .opening)
            machine.opened(epoch: 2)
            #expect(machine.state == expected, "\(mode)")
            // Opened once: a second call changes nothing.
            machine.opened(epoch: 9)
            #expect(machine.state == expected, "\(mode)")
        }
    }

    @Test func aCandidateGrantedTheLeaseLeads() {
        var machine = member()
        #expect(machine.leaseGranted(Self.a) == .lead(epoch: 3, reason: "won the election for epoch 3"))
        #expect(machine.state == .leading(epoch: 3))
        // The same role published again: nothing to do.
        #expect(machine.leaseGranted(Self.a) == .none)
        // A lease in a later epoch: it leads again, in that one.
        #expect(machine.leaseGranted(Self.b) == .lead(epoch: 4, reason: "won the election for epoch 4"))
        #expect(machine.state == .leading(epoch: 4))
    }

    @Test func aCandidateThatSeesALeaderFollowsAndStartsItsStream() {
        var machine = member()
        #expect(
            machine.leaderSeen(Self.a) == .follow(leaderURL: Self.a.url, reason: "a leads epoch 3", restart: true))
        #expect(machine.state == .following(leaderURL: Self.a.url, streaming: true))
        // The same leader again keeps the stream; another leader replaces it.
        #expect(machine.leaderSeen(Self.a) == .follow(leaderURL: Self.a.url, reason: "a leads epoch 3", restart: false))
        #expect(machine.leaderSeen(Self.b) == .follow(leaderURL: Self.b.url, reason: "b leads epoch 4", restart: true))
        #expect(machine.state == .following(leaderURL: Self.b.url, streaming: true))
    }

    @Test func aLeaderThatLosesItsLeaseWaitsAndSaysWhy() {
        var machine = member()
        _ = machine.leaseGranted(Self.a)
        #expect(machine.leaseLost(stopReason: "the lease lapsed") == .awaitLeader(reason: "stopped leading: the lease lapsed"))
        #expect(machine.state == .candidate(streaming: nil))
        // Without a reason from the election: an election is under way.
        #expect(machine.leaseLost() == .awaitLeader(reason: "no leader known; an election is under way"))
    }

    @Test func aLeaderThatSeesAnotherFollowsItAndSaysWhyItStopped() {
        var machine = member()
        _ = machine.leaseGranted(Self.a)
        #expect(
            machine.leaderSeen(Self.b, stopReason: "resigned")
                == .follow(leaderURL: Self.b.url, reason: "stopped leading (resigned); b leads epoch 4", restart: true))
        #expect(machine.state == .following(leaderURL: Self.b.url, streaming: true))
    }

    @Test func aFollowerWhoseLeaderIsLostKeepsItsStreamUntilAnotherIsNamed() {
        var machine = member()
        _ = machine.leaderSeen(Self.a)
        #expect(machine.leaseLost() == .awaitLeader(reason: "no leader known; an election is under way"))
        #expect(machine.state == .candidate(streaming: Self.a.url))
        // The same leader named again: its stream still runs.
        #expect(machine.leaderSeen(Self.a) == .follow(leaderURL: Self.a.url, reason: "a leads epoch 3", restart: false))
        // Then it wins itself: it leads (its driver stops the stream first).
        #expect(machine.leaseGranted(Self.b) == .lead(epoch: 4, reason: "won the election for epoch 4"))
        #expect(machine.state == .leading(epoch: 4))
    }

    @Test func aStreamFromALeaderNoLongerNamedEndsAndIsStartedAgainWhenNamedAgain() {
        var machine = member()
        _ = machine.leaderSeen(Self.a)
        #expect(machine.failed(.leaderGone("epoch 3 is over"), streamingFrom: Self.a.url) == .keepServing(note: "epoch 3 is over"))
        #expect(machine.state == .following(leaderURL: Self.a.url, streaming: false))
        #expect(machine.leaderSeen(Self.a) == .follow(leaderURL: Self.a.url, reason: "a leads epoch 3", restart: true))
        // Ending while the node waits for an election leaves it a candidate with no stream.
        _ = machine.leaseLost()
        #expect(machine.failed(.leaderGone("unreachable"), streamingFrom: Self.a.url) == .keepServing(note: "unreachable"))
        #expect(machine.state == .candidate(streaming: nil))
    }

    @Test func aStreamThatIsNoLongerRunEndsWithoutADecision() {
        var machine = member()
        _ = machine.leaderSeen(Self.b)
        let action = machine.failed(.diverged("fork"), streamingFrom: Self.a.url)
        #expect(action == .keepServing(note: "replication from \(Self.a.url) ended after this node moved on"))
        #expect(machine.state == .following(leaderURL: Self.b.url, streaming: true))
    }

    @Test func aClusterMemberRejoinsWhenDivergedOrBehindAndStopsOtherwise() {
        let expected: [(NodeStateMachine.Failure, NodeStateMachine.FailureAction)] = [
            (.diverged("fork"), .rejoin(MustRejoin(reason: "fork", cause: .diverged))),
            (.behindRetention("dropped"), .rejoin(MustRejoin(reason: "dropped", cause: .behind))),
            (.viewsTorn("torn"), .stop("torn")),
            (.fatal("disk"), .stop("disk")),
        ]
        for (failure, action) in expected {
            var machine = member()
            _ = machine.leaderSeen(Self.a)
            #expect(machine.failed(failure, streamingFrom: Self.a.url) == action, "\(failure)")
            switch action {
            case .rejoin(let rejoin): #expect(machine.state == .rejoining(rejoin))
            case .stop(let why): #expect(machine.state == .stopped(why))
            case .keepServing: Issue.record("unexpected")
            }
        }
    }

    @Test func aFixedFollowerReseedsWhenBehindOrTornAndStopsOtherwise() {
        let expected: [(NodeStateMachine.Failure, NodeStateMachine.FailureAction)] = [
            (.leaderGone("gone"), .stop("gone")),
            (.diverged("fork"), .stop("fork")),
            (.behindRetention("dropped"), .rejoin(MustRejoin(reason: "dropped", cause: .behind))),
            (.viewsTorn("torn"), .rejoin(MustRejoin(reason: "torn", cause: .torn))),
            (.fatal("disk"), .stop("disk")),
        ]
        for (failure, action) in expected {
            var machine = NodeStateMachine(mode: .follower(leaderURL: "http://l:1"))
            #expect(machine.failed(failure) == action, "\(failure)")
        }
    }

    @Test func aLeaderOrAReadOnlyNodeStopsOnEveryFailure() {
        for mode in [NodeStateMachine.Mode.leader, .readOnly] {
            for failure in Self.allFailures {
                var machine = NodeStateMachine(mode: mode)
                machine.opened(epoch: 1)
                guard case .stop = machine.failed(failure) else {
                    Issue.record("\(mode) did not stop on \(failure)")
                    continue
                }
                #expect(machine.isFinished)
            }
        }
    }

    @Test func nodesOfAFixedRoleIgnoreTheElection() {
        for mode in [NodeStateMachine.Mode.leader, .follower(leaderURL: "http://l:1"), .readOnly] {
            var machine = NodeStateMachine(mode: mode)
            machine.opened(epoch: 1)
            let before = machine.state
            #expect(machine.leaseGranted(Self.a) == .none)
            #expect(machine.leaderSeen(Self.a) == .none)
            #expect(machine.leaseLost() == .none)
            #expect(machine.state == before)
        }
    }

    @Test func aFinishedNodeTakesNoMoreRolesAndKeepsItsDecision() {
        var machine = member()
        _ = machine.leaderSeen(Self.a)
        let rejoin = MustRejoin(reason: "fork", cause: .diverged)
        #expect(machine.failed(.diverged("fork"), streamingFrom: Self.a.url) == .rejoin(rejoin))
        #expect(machine.leaseGranted(Self.b) == .none)
        #expect(machine.leaderSeen(Self.b) == .none)
        #expect(machine.leaseLost() == .none)
        #expect(machine.failed(.fatal("later")) == .rejoin(rejoin))
        #expect(machine.state == .rejoining(rejoin))

        var stopped = NodeStateMachine(mode: .leader)
        #expect(stopped.failed(.fatal("disk")) == .stop("disk"))
        #expect(stopped.failed(.diverged("fork")) == .stop("disk"))
    }

    @Test func errorsAreSortedIntoFailures() {
        #expect(NodeStateMachine.Failure(ReplicationError.staleEpoch("old")) == .leaderGone("old"))
        #expect(NodeStateMachine.Failure(ReplicationError.unreachable("down")) == .leaderGone("down"))
        #expect(NodeStateMachine.Failure(ReplicationError.diverged("fork")) == .diverged("fork"))
        #expect(NodeStateMachine.Failure(ReplicationError.behindRetention("dropped")) == .behindRetention("dropped"))
        #expect(NodeStateMachine.Failure(LogError.viewsTorn("torn")) == .viewsTorn("torn"))
        #expect(NodeStateMachine.Failure(MustRejoin(reason: "fork")) == .diverged("fork"))
        #expect(NodeStateMachine.Failure(MustRejoin(reason: "dropped", cause: .behind)) == .behindRetention("dropped"))
        #expect(NodeStateMachine.Failure(ReplicationError.badFrame("chain")) == .fatal("\(ReplicationError.badFrame("chain"))"))
        #expect(NodeStateMachine.Failure(CumulusError(.internalError, "x")) == .fatal("\(CumulusError(.internalError, "x"))"))
    }
}
