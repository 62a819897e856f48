import CumulusLog
import CumulusModel
import CumulusReplication
import Testing

/// The leader's side of a follower's session, every transition without a log, a socket
/// or a clock: whom it streams to and from where, and what it sends next.
@Suite struct FollowerSessionStateMachineTests {
    typealias Machine = FollowerSessionStateMachine
    static let logID = [UInt8](repeating: 7, count: 16)
    static let hash = [UInt8](repeating: 9, count: 32)

    /// A leader in epoch 3 holding commits 11...100.
    static func leader(leads: Bool = true, head: UInt64 = 100, firstRetained: UInt64 = 11) -> Machine.Leader {
        Machine.Leader(logID: logID, epoch: 3, leads: leads, role: leads ? "leader" : "follower", head: head, firstRetained: firstRetained)
    }

    static func identity(epoch: UInt64 = 3, logID: [UInt8] = logID) -> LogStore.Identity {
        LogStore.Identity(logID: logID, epoch: epoch)
    }

    /// A session streaming from 51 (the follower holds 50).
    func streaming() -> Machine {
        var machine = Machine()
        _ = machine.openRequested(identity: Self.identity(), after: 50, hash: Self.hash, leader: Self.leader())
        _ = machine.chainHashRead(.found(Self.hash))
        _ = machine.registered(firstRetained: 11)
        return machine
    }

    @Test func aFollowerOfThisLogAtAKnownPositionIsRegisteredAndStreamed() {
        var machine = Machine()
        #expect(machine.openRequested(identity: Self.identity(), after: 50, hash: Self.hash, leader: Self.leader()) == .readChainHash(at: 50))
        #expect(machine.state == .checking(after: 50, hash: Self.hash))
        #expect(machine.chainHashRead(.found(Self.hash)) == .register(at: 50))
        #expect(machine.state == .registering(after: 50))
        #expect(machine.registered(firstRetained: 11) == .stream(next: 51))
        #expect(machine.state == .streaming(next: 51))
    }

    @Test func aFollowerAtTheStartOrAtTheHeadIsStreamed() {
        for after: UInt64 in [10, 100] {
            var machine = Machine()
            #expect(machine.openRequested(identity: Self.identity(), after: after, hash: Self.hash, leader: Self.leader()) == .readChainHash(at: after))
        }
    }

    @Test func theOpeningChecksRefuseInOrder() {
        let cases: [(LogStore.Identity, UInt64, Machine.Leader, (Machine.OpenAction) -> Bool)] = [
            // Another log, whatever else is wrong.
            (Self.identity(epoch: 9, logID: [UInt8](repeating: 1, count: 16)), 500, Self.leader(leads: false), {
                if case .refuse(.diverged) = $0 { true } else { false }
            }),
            // A newer epoch: superseded, whether this node thinks it leads or not.
            (Self.identity(epoch: 4), 50, Self.leader(leads: false), { $0 == .superseded(epoch: 4, error: .staleEpoch(
                "this node is in epoch 3, the follower in 4: this node was superseded; follow the current leader")) }),
            // Not leading.
            (Self.identity(), 50, Self.leader(leads: false), {
                $0 == .refuse(.refused("this node is not a leader (follower); follow the leader"))
            }),
            // Ahead of this leader's head.
            (Self.identity(), 101, Self.leader(), { if case .refuse(.diverged) = $0 { true } else { false } }),
            // Needs a commit retention dropped.
            (Self.identity(), 9, Self.leader(), { if case .refuse(.behindRetention) = $0 { true } else { false } }),
        ]
        for (index, (identity, after, leader, expected)) in cases.enumerated() {
            var machine = Machine()
            let action = machine.openRequested(identity: identity, after: after, hash: Self.hash, leader: leader)
            #expect(expected(action), "case \(index): \(action)")
            #expect(machine.state == .ended, "case \(index)")
        }
    }

    @Test func aChainHashThatDiffersOrIsMissingOrDroppedRefuses() {
        let cases: [(Machine.ChainHash, (Machine.CheckAction) -> Bool)] = [
            (.found([UInt8](repeating: 8, count: 32)), { if case .refuse(.diverged) = $0 { true } else { false } }),
            (.found(nil), { if case .refuse(.diverged) = $0 { true } else { false } }),
            (.truncated(first: 60), {
                $0 == .refuse(.behindRetention(
                    "the follower needs commit 51, but this leader keeps its log from commit 60 on (--retain-commits): seed it from a snapshot"))
            }),
        ]
        for (read, expected) in cases {
            var machine = Machine()
            _ = machine.openRequested(identity: Self.identity(), after: 50, hash: Self.hash, leader: Self.leader())
            let action = machine.chainHashRead(read)
            #expect(expected(action), "\(read): \(action)")
            #expect(machine.state == .ended)
        }
    }

    @Test func retentionThatDroppedWhatItNeedsAtRegistrationUnregistersIt() {
        var machine = Machine()
        _ = machine.openRequested(identity: Self.identity(), after: 50, hash: Self.hash, leader: Self.leader())
        _ = machine.chainHashRead(.found(Self.hash))
        guard case .unregister(.behindRetention) = machine.registered(firstRetained: 52) else {
            Issue.record("registered a follower whose next commit was dropped")
            return
        }
        #expect(machine.state == .ended)
    }

    @Test func eventsOutOfOrderEndTheSession() {
        var machine = Machine()
        guard case .refuse(.protocolViolation) = machine.chainHashRead(.found(Self.hash)) else {
            Issue.record("a chain hash before the request was taken")
            return
        }
        var again = Machine()
        guard case .unregister(.protocolViolation) = again.registered(firstRetained: 1) else {
            Issue.record("a registration before the check was taken")
            return
        }
        var twice = streaming()
        guard case .refuse(.protocolViolation) = twice.openRequested(
            identity: Self.identity(), after: 50, hash: Self.hash, leader: Self.leader())
        else {
            Issue.record("a session opened twice")
            return
        }
        // Stream events before the stream: it ends.
        var early = Machine()
        #expect(early.nextWanted(supersededBy: nil, configurationDue: false, cancelled: false) == .finish)
        #expect(early.state == .ended)
    }

    @Test func theConfigurationGoesFirstAndAgainOnlyWhenItChanged() {
        var machine = streaming()
        #expect(machine.nextWanted(supersededBy: nil, configurationDue: true, cancelled: false) == .readConfiguration)
        #expect(machine.configurationRead(changed: true) == .sendConfiguration)
        #expect(machine.nextWanted(supersededBy: nil, configurationDue: true, cancelled: false) == .readConfiguration)
        #expect(machine.configurationRead(changed: false) == .readFrames(from: 51))
        #expect(machine.nextWanted(supersededBy: nil, configurationDue: false, cancelled: false) == .readFrames(from: 51))
    }

    @Test func framesAdvanceThePositionAndNeverSayAHeadBehindThem() {
        var machine = streaming()
        _ = machine.nextWanted(supersededBy: nil, configurationDue: false, cancelled: false)
        #expect(machine.framesRead(10, head: 100) == .sendFrames(leaderHead: 100))
        #expect(machine.state == .streaming(next: 61))
        // The head read a moment before frames that went past it.
        #expect(machine.framesRead(50, head: 100) == .sendFrames(leaderHead: 110))
        #expect(machine.state == .streaming(next: 111))
    }

    @Test func caughtUpItWaitsThenSendsWhatArrivedOrAHeartbeat() {
        var machine = streaming()
        #expect(machine.framesRead(0, head: 50) == .waitForCommit(after: 50))
        #expect(machine.state == .waiting(next: 51))
        #expect(machine.waitEnded(arrived: false, cancelled: false) == .sendHeartbeat)
        #expect(machine.state == .streaming(next: 51))
        #expect(machine.framesRead(0, head: 50) == .waitForCommit(after: 50))
        #expect(machine.waitEnded(arrived: true, cancelled: false) == .readFrames(from: 51))
        #expect(machine.framesRead(1, head: 51) == .sendFrames(leaderHead: 51))
    }

    @Test func aSupersededLeaderSaysSoOnceAndEnds() {
        var machine = streaming()
        #expect(
            machine.nextWanted(supersededBy: 4, configurationDue: true, cancelled: false)
                == .sendFailure("the leader was superseded by epoch 4; follow the current leader"))
        #expect(machine.state == .ended)
        #expect(machine.nextWanted(supersededBy: 4, configurationDue: false, cancelled: false) == .finish)
    }

    @Test func aFollowerThatWentAwayEndsTheStream() {
        var asking = streaming()
        #expect(asking.nextWanted(supersededBy: nil, configurationDue: false, cancelled: true) == .finish)
        #expect(asking.state == .ended)
        var waiting = streaming()
        _ = waiting.framesRead(0, head: 50)
        #expect(waiting.waitEnded(arrived: true, cancelled: true) == .finish)
        #expect(waiting.state == .ended)
        // Nothing after the end.
        #expect(waiting.configurationRead(changed: true) == .finish)
        #expect(waiting.framesRead(3, head: 60) == .finish)
        #expect(waiting.waitEnded(arrived: true, cancelled: false) == .finish)
    }
}
