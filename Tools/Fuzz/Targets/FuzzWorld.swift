import CumulusEngine
import CumulusServer
import CumulusStorage
import Foundation
import Synchronization

/// A served container in a temporary directory with one user, for the targets that
/// need a live server or a log: the same parts `cumulus serve` puts together.
///
/// Commits are not fsynced (`durable: false`): the data is thrown away, and an
/// fsync per accepted input would cut the fuzzer's rate a hundredfold.
final class FuzzWorld: Sendable {
    static let containerName = "iCloud.com.example.todo"

    /// Inputs one shared world serves before a fresh one replaces it. State
    /// accumulates as inputs are accepted, as it would on a server that clients keep
    /// writing to; but a world that only grows makes every input slower (queries and
    /// change feeds read what all the inputs before wrote): `api-request` fell from 430
    /// to 100 executions a second over half a million, and a full run of a million did
    /// not fit its 90 minutes. A generation keeps the state of tens of thousands of
    /// inputs and the rate of the first.
    static let generation = 25_000

    private static let current = Mutex<(world: FuzzWorld?, served: Int)>((nil, 0))

    /// The world the next input is served by: the current generation's, or a fresh
    /// one once it has served ``generation`` inputs (the old one is removed when the
    /// last input holding it ends). `nil` if a world could not be made.
    static func next() -> FuzzWorld? {
        current.withLock { state in
            if state.world == nil || state.served >= generation {
                state.world = try? FuzzWorld(label: "shared")
                state.served = 0
            }
            state.served += 1
            return state.world
        }
    }

    let path: String
    let container: Container
    let api: CloudKitAPI
    let apiToken: String
    let userToken: String

    init(label: String) throws {
        path = NSTemporaryDirectory() + "cumulus-fuzz-\(label)-\(getpid())-\(UUID().uuidString)"
        var options = LMDBEnvironment.Options()
        options.durable = false
        container = try Container(path: path, environmentOptions: options)
        let auth = try AuthStore(environment: container.store.logEnvironment)
        var api = CloudKitAPI(container: container, auth: auth)
        // Millions of inputs from one user: past the rate limit every one would be
        // THROTTLED before reaching the code under test.
        api.limits.requestsPerUser = .unlimited
        self.api = api
        apiToken = try auth.createAPIToken(container: Self.containerName, environment: .development)
        userToken = try auth.createWebAuthToken(for: try auth.addUser(), container: Self.containerName)
    }

    deinit {
        container.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `POST`s `body` to `route` (`private/records/modify`, …) of the development
    /// environment as the world's user.
    func post(_ route: String, _ body: [UInt8]) async -> APIResponse {
        await api.handle(APIRequest(
            method: route.hasSuffix("/list") ? "GET" : "POST",
            path: "/database/1/\(Self.containerName)/development/\(route)",
            // timeout=0: a notifications/poll answers at once with what it has. A long
            // poll waits its 30 s by design, which libFuzzer would take for a hang.
            query: ["ckAPIToken": apiToken, "ckWebAuthToken": userToken, "timeout": "0"], body: body))
    }
}
