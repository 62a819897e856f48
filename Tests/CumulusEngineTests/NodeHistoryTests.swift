import CumulusEngine
import Foundation
import Testing

@Suite("Node history")
struct NodeHistoryTests {
    @Test("a superseded container records it once, the first to learn it")
    func supersededOnce() throws {
        let world = try EngineWorld()
        let epoch = world.container.store.epoch
        #expect(world.container.supersede(by: epoch + 5))
        #expect(!world.container.supersede(by: epoch + 6), "only the first to learn it records it")
        #expect(world.container.history.changes.map(\.role) == ["superseded"])
        #expect(world.container.history.changes.map(\.reason) == ["learned of a leader in epoch \(epoch + 5)"])
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
