import CumulusLog
import CumulusModel
import Testing

@testable import CumulusReplication

/// The follower's decisions without a network: events in, actions out.
@Suite("Follower state machine")
struct FollowerStateMachineTests {
    static let url = "http://leader.test:8765"
    static let logID = [UInt8](repeating: 7, count: 16)
    static let local = LogStore.Identity(logID: logID, epoch: 2)
    static let head = LogHead(sequence: 40, hash: [UInt8](repeating: 9, count: 32))

    static func hello(logID: [UInt8] = logID, epoch: UInt64 = 3, role: String = "leader") -> ReplicationHello {
        ReplicationHello(logID: Hex.encode(logID), epoch: epoch, head: 50, headHash: String(repeating: "ab", count: 32), role: role)
    }

    /// A machine that has said hello and opened its stream.
    static func streaming() -> FollowerStateMachine {
        var machine = FollowerStateMachine(leaderURL: url)
        _ = machine.receive(.start)
        _ = machine.receive(.helloReceived(hello(), local: local, head: head))
        _ = machine.receive(.streamOpened)
        return machine
    }

    @Test("a leader of the same log in the same or a newer epoch is followed from this node's head; its epoch is adopted once the stream opens")
    func followsTheLeader() {
        var machine = FollowerStateMachine(leaderURL: Self.url)
        #expect(machine.phase == "connecting")
        #expect(machine.receive(.start) == .sayHello)
        #expect(machine.receive(.helloReceived(Self.hello(), local: Self.local, head: Self.head))
            == .openStream(after: 40, hash: Self.head.hash))
        #expect(machine.state == .opening(after: 40, epoch: 3))
        #expect(machine.receive(.streamOpened) == .adoptEpoch(3))
        #expect(machine.state == .streaming && machine.phase == "streaming" && machine.problem == nil)
        // Out of turn: nothing.
        #expect(machine.receive(.streamOpened) == .none)
        #expect(machine.receive(.helloReceived(Self.hello(), local: Self.local, head: Self.head)) == .none)
    }

    @Test("another log, an older epoch, a node that does not lead, a malformed hello: the session ends with the reason")
    func refusesWhatCouldFork() {
        let cases: [(ReplicationHello, (ReplicationError) -> Bool)] = [
            (Self.hello(logID: [UInt8](repeating: 1, count: 16)), { if case .diverged = $0 { true } else { false } }),
            (Self.hello(epoch: 1), { if case .staleEpoch = $0 { true } else { false } }),
            (Self.hello(role: "follower"), { $0.isTransient }),
            (ReplicationHello(logID: "zz", epoch: 3, head: 0, headHash: "", role: "leader"),
             { if case .protocolViolation = $0 { true } else { false } }),
        ]
        for (hello, expected) in cases {
            var machine = FollowerStateMachine(leaderURL: Self.url)
            _ = machine.receive(.start)
            guard case .endSession(let error) = machine.receive(.helloReceived(hello, local: Self.local, head: Self.head)) else {
                Issue.record("\(hello) was not refused")
                continue
            }
            #expect(expected(error), "\(hello): \(error)")
            #expect(machine.receive(.streamOpened) == .none, "no stream after a refusal")
        }
    }

    @Test("each message calls for its action; a leader's failure message ends the session as superseded")
    func messages() {
        var machine = Self.streaming()
        #expect(machine.receive(.messageReceived(.frames([[1, 2]], leaderHead: 60))) == .apply([[1, 2]], leaderHead: 60))
        #expect(machine.receive(.messageReceived(.heartbeat(leaderHead: 61, now: Timestamp(millisecondsSince1970: 5))))
            == .noteContact(leaderHead: 61))
        let configuration = ReplicatedConfiguration(entries: [:])
        #expect(machine.receive(.messageReceived(.configuration(configuration))) == .storeConfiguration(configuration))
        guard case .endSession(.staleEpoch) = machine.receive(.messageReceived(.failure("superseded by epoch 4"))) else {
            Issue.record("a failure message must end the session as a stale epoch")
            return
        }
    }

    @Test("a broken session is retried with backoff that doubles up to 5 s, and starts again at 100 ms once a session hears from the leader")
    func backoff() {
        var machine = FollowerStateMachine(leaderURL: Self.url)
        var waits: [Duration] = []
        _ = machine.receive(.start)
        for _ in 0..<8 {
            guard case .wait(let wait) = machine.receive(.sessionEnded(.unreachable("connection refused"))) else {
                Issue.record("an unreachable leader must be retried")
                return
            }
            #expect(machine.phase == "retrying" && machine.problem?.contains("connection refused") == true)
            waits.append(wait)
            #expect(machine.receive(.sessionEnded(.unreachable("again"))) == .none, "one end per session")
            #expect(machine.receive(.waitEnded) == .sayHello)
        }
        #expect(waits.map(\.components.seconds) == [0, 0, 0, 0, 1, 3, 5, 5])
        #expect(waits.prefix(4) == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)])
        // A session that heard the leader (here, a heartbeat) reconnects at once.
        _ = machine.receive(.helloReceived(Self.hello(), local: Self.local, head: Self.head))
        _ = machine.receive(.streamOpened)
        _ = machine.receive(.messageReceived(.heartbeat(leaderHead: 1, now: Timestamp(millisecondsSince1970: 0))))
        #expect(machine.receive(.sessionEnded(.unreachable("the stream broke"))) == .wait(.milliseconds(100)))
        _ = machine.receive(.waitEnded)
        #expect(machine.receive(.sessionEnded(.unreachable("refused"))) == .wait(.milliseconds(200)))
    }

    @Test("a follower behind the leader's retained log re-seeds; a bad frame, a refusal or a divergence stops it for good")
    func finalEnds() {
        var machine = Self.streaming()
        #expect(machine.receive(.sessionEnded(.behindRetention("dropped"))) == .reseed(.behindRetention("dropped")))
        #expect(machine.phase == "re-seeding")
        for error in [ReplicationError.badFrame("chain"), .refused("secret"), .diverged("fork"), .staleEpoch("old")] {
            var machine = Self.streaming()
            #expect(machine.receive(.sessionEnded(error)) == .stop(error))
            #expect(machine.phase == "stopped" && machine.problem == error.description)
            #expect(machine.receive(.waitEnded) == .none && machine.receive(.start) == .none, "stopped stays stopped")
        }
        var faulted = Self.streaming()
        #expect(faulted.receive(.faulted("disk full")) == .none)
        #expect(faulted.phase == "stopped" && faulted.problem == "disk full")
    }
}
