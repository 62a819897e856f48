import CumulusEngine
import CumulusLog
import CumulusModel
import Testing

/// An operator's schema and role changes carry the request ID their caller gives (the
/// CLI names the command and its run), as a client's writes carry their request's.
@Suite("Schema commit request IDs")
struct SchemaCommitRequestIDTests {
    @Test("schema import, deploy and reset and role assignments commit under the request ID given")
    func schemaAndRoles() async throws {
        let world = try EngineWorld()
        let store = world.container.store
        let container = EngineWorld.containerID
        let development = SchemaID(container: container, environment: .development)
        func last() throws -> String? { try store.read(store.head.sequence)?.requestID }
        _ = try await world.container.importSchema(
            "DEFINE SCHEMA CREATE ROLE Editor; RECORD TYPE Note (title STRING QUERYABLE);", into: development,
            requestID: "import-1")
        #expect(try last() == "import-1")
        _ = try await world.container.deploySchema(container: container, requestID: "deploy-1")
        #expect(try last() == "deploy-1")
        try await world.container.assignRoles(["Editor"], to: EngineWorld.otherUser, in: development, requestID: "roles-1")
        #expect(try last() == "roles-1")
        _ = try await world.container.importSchema(
            "DEFINE SCHEMA CREATE ROLE Editor; RECORD TYPE Note (title STRING QUERYABLE, body STRING);", into: development,
            requestID: "import-2")
        #expect(try last() == "import-2")
        _ = try await world.container.resetSchema(container: container, requestID: "reset-1")
        #expect(try last() == "reset-1")
    }
}
