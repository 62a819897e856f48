import CumulusEngine
import CumulusModel
import CumulusServer
import CumulusTestSupport
import Foundation
import Testing

/// A served container in a temporary directory, with two users and their tokens.
final class APIWorld: @unchecked Sendable {
    static let containerName = ContainerWorld.containerID
    /// The world's temporary directory, removed with the world.
    let directory: TemporaryDirectory
    /// The container's data directory.
    var path: String { directory.path }
    let container: Container
    let auth: AuthStore
    let api: CloudKitAPI
    /// The development environment's API token.
    let apiToken: String
    /// The production environment's: a token opens one environment.
    let productionAPIToken: String
    let alice: String
    let aliceToken: String
    let bob: String
    let bobToken: String

    init(_ label: String = #function) throws {
        let directory = TemporaryDirectory("api-" + label)
        self.directory = directory
        container = try Container(path: directory.path)
        auth = try AuthStore(environment: container.store.logEnvironment)
        api = CloudKitAPI(container: container, auth: auth)
        apiToken = try auth.createAPIToken(container: Self.containerName, environment: .development)
        productionAPIToken = try auth.createAPIToken(container: Self.containerName, environment: .production)
        alice = try auth.addUser()
        aliceToken = try auth.createWebAuthToken(for: alice, container: Self.containerName)
        bob = try auth.addUser()
        bobToken = try auth.createWebAuthToken(for: bob, container: Self.containerName)
    }

    /// What is on disk of `other`, opened as a node restarting would open it: the
    /// same users and tokens. `other` is closed and its directory copied (one process
    /// may not open one LMDB environment twice), so only what was durable survives.
    private init(restarting other: APIWorld) throws {
        other.container.close()
        let directory = TemporaryDirectory("api-restarted")
        self.directory = directory
        try FileManager.default.copyItem(atPath: other.path, toPath: directory.path)
        container = try Container(path: directory.path)
        auth = try AuthStore(environment: container.store.logEnvironment)
        api = CloudKitAPI(container: container, auth: auth)
        (apiToken, productionAPIToken) = (other.apiToken, other.productionAPIToken)
        (alice, aliceToken, bob, bobToken) = (other.alice, other.aliceToken, other.bob, other.bobToken)
    }

    /// This world's node restarted on what it had made durable (``init(restarting:)``);
    /// this world is closed.
    func restarted() throws -> APIWorld {
        try APIWorld(restarting: self)
    }

    deinit {
        container.close()
        directory.remove()
    }

    /// The metrics token ``operatorAPI(metrics:metricsToken:)`` sets by default.
    static let metricsToken = "m3trics"

    /// An API over this world counting into `metrics`, with `metricsToken` opening
    /// `/metrics` and the detail of `/healthz` (`nil`: none set).
    func operatorAPI(metrics: ServerMetrics, metricsToken: String? = APIWorld.metricsToken) -> CloudKitAPI {
        CloudKitAPI(container: container, auth: auth, metrics: metrics, metricsToken: metricsToken)
    }

    /// POSTs `body` (JSON text) to `operation` in `database`, as `user` (nil: no web token).
    func post(
        _ operation: String, _ body: String, database: String = "private", token: String?? = nil, apiToken: String? = nil,
        environment: String = "development"
    ) async throws -> (status: Int, json: JSONValue) {
        var query = ["ckAPIToken": apiToken ?? (environment == "production" ? productionAPIToken : self.apiToken)]
        switch token {
        case .none: query["ckWebAuthToken"] = aliceToken
        case .some(.none): break
        case .some(.some(let value)): query["ckWebAuthToken"] = value
        }
        let response = await api.handle(APIRequest(
            method: operation.hasSuffix("list") || operation.hasPrefix("users") ? "GET" : "POST",
            path: "/database/1/\(Self.containerName)/\(environment)/\(database)/\(operation)",
            query: query, body: Array(body.utf8)))
        let json = try JSONValue.parse(Data(response.bodyBytes()))
        return (response.status, json)
    }
}

extension APIWorld {
    /// Creates alice's zone `big` holding `count` `Blob` records of about 100 KB each,
    /// named `r0`, `r1`, … with `n` their number: answers larger than the socket
    /// buffers, or than a byte budget.
    func fillBigZone(records count: Int) async throws {
        #expect(try await post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"big"}}}]}"#).status == 200)
        let text = String(repeating: "x", count: 100_000)
        for start in stride(from: 0, to: count, by: 25) {
            let operations = (start..<min(start + 25, count)).map {
                #"{"operationType":"forceReplace","record":{"recordName":"r\#($0)","recordType":"Blob","fields":{"n":{"value":\#($0)},"text":{"value":"\#(text)"}}}}"#
            }
            let body = #"{"zoneID":{"zoneName":"big"},"operations":[\#(operations.joined(separator: ","))]}"#
            #expect(try await post("records/modify", body).status == 200)
        }
    }
}

extension JSONValue {
    /// `records[i]`-style access for tests.
    subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
