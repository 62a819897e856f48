import CumulusEngine
import Foundation
import Testing

@Suite("Node history")
struct NodeHistoryTests {
    @Test("a container records each change of its role with its epoch and reason; a role confirmed is not a change")
    func containerRecordsRoles() async throws {
        let world = try EngineWorld()
        let container = world.container
        let epoch = container.store.epoch
        try container.follow(leaderURL: "http://b:8765", because: "b leads")
        try container.follow(leaderURL: "http://b:8765", because: "b still leads")
        container.awaitLeader(because: "stopped leading: lease lost")
        try container.lead(epoch: epoch + 1, because: "won the election for epoch \(epoch + 1)")
        #expect(container.supersede(by: epoch + 5))
        #expect(!container.supersede(by: epoch + 6), "only the first to learn it records it")
        let changes = container.history.changes
        #expect(changes.map(\.role) == ["leader", "follower", "candidate", "leader", "superseded"])
        #expect(changes.map(\.reason) == [
            "opened \(world.path)", "b leads", "stopped leading: lease lost", "won the election for epoch \(epoch + 1)",
            "learned of a leader in epoch \(epoch + 5)",
        ])
        #expect(changes[1].leaderURL == "http://b:8765")
        #expect(changes[3].epoch == epoch + 1)
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.atMilliseconds <= $1.atMilliseconds })
        let leadership = try #require(container.history.lastLeadership)
        #expect(leadership.began.epoch == epoch + 1)
        #expect(leadership.ended?.role == "superseded")
        #expect(changes[3].line.hasSuffix("leader, epoch \(epoch + 1): won the election for epoch \(epoch + 1)"))
    }

    @Test("a history keeps the latest changes only")
    func bounded() {
        let history = NodeHistory()
        for index in 0..<(NodeHistory.capacity + 10) {
            history.record(index % 2 == 0 ? "leader" : "candidate", epoch: UInt64(index), reason: "change \(index)")
        }
        #expect(history.changes.count == NodeHistory.capacity)
        #expect(history.changes.first?.reason == "change 10")
        #expect(history.changes.last?.reason == "change \(NodeHistory.capacity + 9)")
        #expect(history.lastLeadership?.ended?.reason == "change \(NodeHistory.capacity + 9)")
    }
}
