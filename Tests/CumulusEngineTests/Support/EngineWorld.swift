import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation
import Testing

/// A container in its own temporary directory, with the little helpers the engine
/// tests share. Every test builds the world it needs.
final class EngineWorld: @unchecked Sendable {
    static let user = "_alice0000000000000000000000000001"
    static let otherUser = "_bob00000000000000000000000000002"
    static let containerID = "iCloud.com.example.todo"

    let path: String
    let container: Container
    let db: Database

    init(_ label: String = #function) throws {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        path = NSTemporaryDirectory() + "cumulus-engine-\(safe)-\(UUID().uuidString)"
        container = try Container(path: path)
        db = container.privateDatabase(container: Self.containerID, user: Self.user)
    }

    deinit {
        container.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    /// A custom zone, created.
    func makeZone(_ name: String = "Lists") async throws -> ZoneID {
        let zone = ZoneID(zoneName: name, ownerName: Self.user)
        let results = try await db.saveZones([zone], as: Self.user)
        _ = try results[0].result.get()
        return zone
    }

    /// Saves records (force-style, no tag checks) and returns them as stored.
    @discardableResult
    func save(_ records: [Record], atomic: Bool = true, policy: SavePolicy = .allKeys) async throws -> [Record] {
        let result = try await db.modify(saving: records, savePolicy: policy, atomic: atomic, as: Self.user)
        return try result.saveResults.map { try $0.result.get() }
    }

    /// Deletes records; returns the result.
    @discardableResult
    func delete(_ ids: [RecordID], atomic: Bool = true) async throws -> ModifyResult {
        try await db.modify(deleting: ids, atomic: atomic, as: Self.user)
    }

    /// Whether each ID exists.
    func exists(_ ids: [RecordID]) throws -> [Bool] {
        try db.fetch(ids, as: Self.user).map { (try? $0.result.get()) != nil }
    }

    /// Whether none of `ids` exists.
    func noneExist(_ ids: [RecordID]) throws -> Bool { try exists(ids).allSatisfy { !$0 } }

    /// Whether all of `ids` exist.
    func allExist(_ ids: [RecordID]) throws -> Bool { try exists(ids).allSatisfy { $0 } }

    func fetch(_ id: RecordID) throws -> Record { try db.fetch(id, as: Self.user) }

    /// Runs `check` on the live views, then proves them equal to a rebuild from the
    /// log (verify compares digests against a scratch rebuild), rebuilds in place,
    /// and runs `check` again on the rebuilt views.
    func checkLiveAndRebuilt(_ check: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try check()
        let before = try digests()
        let report = try container.verify()
        #expect(report.isHealthy, "\(report.lines)", sourceLocation: sourceLocation)
        try container.rebuild()
        #expect(try digests() == before, "views differ after a rebuild", sourceLocation: sourceLocation)
        try check()
    }

    func digests() throws -> [ViewDigest] {
        try container.store.environment.read { txn in
            try container.views.tables.all.map { try ViewDigest.of($0, in: txn) }
        }
    }

    /// Every commit's events, flattened.
    func allEvents() throws -> [Event] {
        try container.store.range(from: 1).flatMap(\.events)
    }
}

extension Record {
    /// A record with `fields`, in `zone`.
    static func make(_ type: String, _ name: String, in zone: ZoneID, _ fields: [String: FieldValue] = [:]) -> Record {
        Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone), fields: fields)
    }
}

func ref(_ name: String, in zone: ZoneID, _ action: Reference.Action = .none) -> FieldValue {
    .reference(Reference(recordID: RecordID(recordName: name, zoneID: zone), action: action))
}

func id(_ name: String, in zone: ZoneID) -> RecordID { RecordID(recordName: name, zoneID: zone) }

func ids(_ names: [String], in zone: ZoneID) -> [RecordID] { names.map { RecordID(recordName: $0, zoneID: zone) } }

/// The error of a failed result, or nil.
func failure<T>(_ result: Result<T, CumulusError>) -> CumulusError? {
    if case .failure(let error) = result { return error }
    return nil
}
