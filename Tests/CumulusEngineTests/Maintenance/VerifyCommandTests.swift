import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusViews
import CumulusTestSupport
import Foundation
import Testing

@Suite("cumulus verify / rebuild commands")
struct VerifyCommandTests {
    /// The `cumulus` executable built beside the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("cumulus")
    }

    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try SpawnedProcess.run(Self.executable.path, arguments, errors: .withOutput)
    }

    @Test("exit 0 on a healthy directory; non-zero naming the table after a view entry is altered; rebuild repairs")
    func verifyCommand() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable.path) else {
            Issue.record("cumulus executable not built at \(Self.executable.path); run `make test`")
            return
        }
        let path = NSTemporaryDirectory() + "cumulus-cli-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let zone = ZoneID(zoneName: "Lists", ownerName: EngineWorld.user)
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: EngineWorld.containerID, user: EngineWorld.user)
            _ = try await db.saveZones([zone], as: EngineWorld.user)
            _ = try await db.modify(saving: (0..<10).map { Record.make("T", "r\($0)", in: zone) }, as: EngineWorld.user)
            container.close()
        }
        var result = try run(["verify", "--data", path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("verify: OK"))

        do {
            let container = try Container(path: path)
            let db = DatabaseID(container: EngineWorld.containerID, scope: .private, owner: EngineWorld.user)
            let key = ViewKeys.record(FeedKeys.zone(db, zone), "r3")
            try container.store.environment.write { txn in
                _ = try txn.delete(container.views.tables.records, key: key)
            }
            container.close()
        }
        result = try run(["verify", "--data", path])
        #expect(result.status != 0)
        #expect(result.output.contains("view records DIFFERS"), "\(result.output)")

        result = try run(["rebuild", "--data", path])
        #expect(result.status == 0, "\(result.output)")
        result = try run(["verify", "--data", path])
        #expect(result.status == 0, "\(result.output)")
    }
}
