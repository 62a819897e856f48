import CumulusEngine
import CumulusModel

/// The victim of the engine's notification crash test
/// (`NotificationCrashTests.killedWriter`): in the container at `--dir`, as `--user`
/// of `--container`, it subscribes to every `Todo` and to the zone, then saves
/// records from four tasks and prints `ack NAME` for each save the writer has
/// acknowledged (fsynced), until it is killed. It is a program of its own, not a test
/// the test binary re-runs with a filter: a test that does nothing unless started by
/// another is not a test.
///
/// Each task saves at most ``notifyWritesPerWorker`` records, then the child waits to
/// be killed: a parent starved on a loaded machine may kill late, and past the
/// notifications kept per user (100,000; two per save here) the oldest are dropped by
/// design, which the test's checks would take for lost ones.
func runNotifyChild(_ arguments: Arguments) async throws {
    guard !arguments.container.isEmpty, !arguments.user.isEmpty else {
        throw HarnessFailure("--notify-child needs --container and --user")
    }
    let user = arguments.user
    let container = try Container(path: arguments.dir)
    let db = container.privateDatabase(container: arguments.container, user: user)
    let zone = ZoneID(zoneName: "Lists", ownerName: user)
    _ = try await db.saveZones([zone], as: user)
    _ = try await db.saveSubscriptions(
        [
            Subscription(
                subscriptionID: "todos",
                kind: .query(Query(recordType: "Todo"), zoneID: nil, firesOn: .all, firesOnce: false)),
            Subscription(subscriptionID: "zone", kind: .zone(zone, recordType: nil)),
        ],
        as: user)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<4 {
            group.addTask {
                for index in 0..<notifyWritesPerWorker {
                    let name = "w\(worker)-\(index)"
                    let record = Record(recordType: "Todo", recordID: RecordID(recordName: name, zoneID: zone))
                    _ = try await db.modify(saving: [record], savePolicy: .allKeys, as: user)
                    // Printed only once the writer has acknowledged the commit.
                    writeLine("ack \(name)")
                }
            }
        }
        try await group.waitForAll()
    }
    try await Task.sleep(for: .seconds(3_600))
}

/// Saves each of the notification child's four workers makes at most: 4 × 5,000
/// saves make 40,000 notifications, well under the 100,000 kept per user.
let notifyWritesPerWorker = 5_000
