import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusViews
import CumulusTestSupport
import Foundation
import Testing

@Suite("cumulus verify / rebuild commands")
struct VerifyCommandTests {
    @Test("exit 0 on a healthy directory; non-zero naming the table after a view entry is altered; rebuild repairs")
    func verifyCommand() async throws {
        guard CumulusExecutable.isBuilt() else { return }
        let temporary = TemporaryDirectory("cli")
        defer { temporary.remove() }
        let path = temporary.path
        let zone = ZoneID(zoneName: "Lists", ownerName: ContainerWorld.user)
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: ContainerWorld.containerID, user: ContainerWorld.user)
            _ = try await db.saveZones([zone], as: ContainerWorld.user)
            _ = try await db.modify(saving: (0..<10).map { Record.make("T", "r\($0)", in: zone) }, as: ContainerWorld.user)
            container.close()
        }
        var result = try CumulusExecutable.run(["verify", "--data", path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("verify: OK"))

        do {
            let container = try Container(path: path)
            let db = DatabaseID(container: ContainerWorld.containerID, scope: .private, owner: ContainerWorld.user)
            let key = ViewKeys.record(FeedKeys.zone(db, zone), "r3")
            try container.store.environment.write { txn in
                _ = try txn.delete(container.views.tables.records, key: key)
            }
            container.close()
        }
        result = try CumulusExecutable.run(["verify", "--data", path])
        #expect(result.status != 0)
        #expect(result.output.contains("view records DIFFERS"), "\(result.output)")

        result = try CumulusExecutable.run(["rebuild", "--data", path])
        #expect(result.status == 0, "\(result.output)")
        result = try CumulusExecutable.run(["verify", "--data", path])
        #expect(result.status == 0, "\(result.output)")
    }
}
