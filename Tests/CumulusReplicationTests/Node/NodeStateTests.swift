import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import CumulusTestSupport
import Foundation
import Testing

/// A node's role while it runs: it follows one leader, waits for an election, then
/// leads in the epoch it won; the container refuses or takes writes accordingly, and
/// each change is in the node's history.
@Suite struct NodeStateTests {
    /// A leader's data directory holding one zone, and that zone.
    func world() async throws -> (ContainerWorld, ZoneID) {
        let world = try ContainerWorld()
        return (world, try await world.makeZone())
    }

    func refusal(_ world: ContainerWorld, _ zone: ZoneID, _ name: String) async -> CumulusError? {
        do {
            try await world.save([Record.make("Item", name, in: zone)])
            return nil
        } catch let error as CumulusError {
            return error
        } catch {
            return CumulusError(.internalError, "\(error)")
        }
    }

    @Test func eachRoleRefusesWritesSayingWhereTheyGo() async throws {
        let (world, zone) = try await world()
        let node = NodeState(container: world.container, role: .leader, because: "opened")
        #expect(node.leads && node.reportedRole == "leader")
        try node.follow(leaderURL: "http://n2:8765", because: "n2 leads")
        #expect(node.role == .follower(leaderURL: "http://n2:8765") && !node.leads)
        let following = await refusal(world, zone, "while-following")
        #expect(following?.code == .notLeader)
        #expect(following?.message.contains("http://n2:8765") == true)
        #expect(world.container.store.isFollowerDirectory, "opened on its own later, it must take no writes")
        node.awaitLeader(because: "no leader known")
        #expect(node.role == .candidate)
        #expect(await refusal(world, zone, "while-electing")?.message.contains("electing a leader") == true)
    }

    @Test func leadingInANewEpochLetsWritesInAndIsRemembered() async throws {
        let (world, zone) = try await world()
        let node = NodeState(container: world.container, role: .candidate, because: "opened")
        let before = world.container.store.epoch
        try node.follow(leaderURL: "http://n2:8765", because: "n2 leads")
        try node.lead(epoch: before + 3, because: "won")
        #expect(node.role == .leader && node.leads)
        #expect(world.container.store.epoch == before + 3)
        #expect(!world.container.store.isFollowerDirectory)
        try await world.save([Record.make("Item", "while-leading", in: zone)])
        // A restart opens it as the leader it became, in that epoch.
        world.container.close()
        let reopened = try Container(path: world.path)
        #expect(reopened.store.epoch == before + 3)
        #expect(NodeState(container: reopened, role: .leader, because: "restarted").leads)
        reopened.close()
    }

    @Test func anEpochThatIsNotNewIsRefusedAndTheRoleStays() async throws {
        let (world, zone) = try await world()
        let node = NodeState(container: world.container, role: .leader, because: "opened")
        try node.follow(leaderURL: "http://n2:8765", because: "n2 leads")
        let epoch = world.container.store.epoch
        #expect(throws: (any Error).self) { try node.lead(epoch: epoch, because: "won?") }
        #expect(node.role == .follower(leaderURL: "http://n2:8765"), "still following")
        #expect(await refusal(world, zone, "same-epoch")?.code == .notLeader)
        #expect(world.container.store.epoch == epoch)
    }

    @Test func aSupersededLeaderReportsItselfSoAndLeadsNoMore() async throws {
        let (world, zone) = try await world()
        let node = NodeState(container: world.container, role: .leader, because: "opened")
        #expect(world.container.supersede(by: world.container.store.epoch + 1))
        #expect(node.role == .leader && !node.leads)
        #expect(node.reportedRole == "superseded")
        #expect(await refusal(world, zone, "superseded")?.message.contains("superseded") == true)
    }

    @Test func theNodeRecordsEachChangeOfItsRoleWithItsEpochAndReason() async throws {
        let (world, _) = try await world()
        let node = NodeState(container: world.container, role: .leader, because: "opened \(world.path)")
        let epoch = world.container.store.epoch
        try node.follow(leaderURL: "http://b:8765", because: "b leads")
        try node.follow(leaderURL: "http://b:8765", because: "b still leads")
        node.awaitLeader(because: "stopped leading: lease lost")
        try node.lead(epoch: epoch + 1, because: "won the election for epoch \(epoch + 1)")
        #expect(world.container.supersede(by: epoch + 5))
        let changes = world.container.history.changes
        #expect(changes.map(\.role) == ["leader", "follower", "candidate", "leader", "superseded"])
        #expect(changes.map(\.reason) == [
            "opened \(world.path)", "b leads", "stopped leading: lease lost", "won the election for epoch \(epoch + 1)",
            "learned of a leader in epoch \(epoch + 5)",
        ])
        #expect(changes[1].leaderURL == "http://b:8765")
        #expect(changes[3].epoch == epoch + 1)
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.atMilliseconds <= $1.atMilliseconds })
        let leadership = try #require(world.container.history.lastLeadership)
        #expect(leadership.began.epoch == epoch + 1)
        #expect(leadership.ended?.role == "superseded")
        #expect(changes[3].line.hasSuffix("leader, epoch \(epoch + 1): won the election for epoch \(epoch + 1)"))
    }
}
