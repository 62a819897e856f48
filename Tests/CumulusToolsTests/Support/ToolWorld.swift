import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTools
import CumulusViews
import Foundation
import Testing

/// A container in its own temporary directory with the helpers the tools tests
/// share; scratch paths beside it (replays, exports) are removed with it.
final class ToolWorld: @unchecked Sendable {
    static let user = "_alice0000000000000000000000000001"
    static let containerID = "iCloud.com.example.todo"

    let path: String
    let container: Container
    let db: Database

    init(_ label: String = #function) throws {
        let safe = label.filter { $0.isLetter || $0.isNumber }
        path = NSTemporaryDirectory() + "cumulus-tools-\(safe)-\(UUID().uuidString)"
        container = try Container(path: path + "/data")
        db = container.privateDatabase(container: Self.containerID, user: Self.user)
    }

    deinit {
        container.close()
        try? FileManager.default.removeItem(atPath: path)
    }

    var store: LogStore { container.store }
    var head: UInt64 { container.store.head.sequence }
    var database: DatabaseID { db.id }

    /// A path inside the world's directory that does not exist yet.
    func scratch(_ name: String) -> String { path + "/" + name }

    /// A custom zone, created.
    @discardableResult
    func makeZone(_ name: String = "Lists") async throws -> ZoneID {
        let zone = ZoneID(zoneName: name, ownerName: Self.user)
        let results = try await db.saveZones([zone], as: Self.user)
        _ = try results[0].result.get()
        return zone
    }

    /// Saves records (no tag checks) in one commit and returns them as stored.
    @discardableResult
    func save(_ records: [Record]) async throws -> [Record] {
        let result = try await db.modify(saving: records, savePolicy: .allKeys, atomic: true, as: Self.user)
        return try result.saveResults.map { try $0.result.get() }
    }

    /// Deletes records in one commit.
    func delete(_ ids: [RecordID]) async throws {
        let result = try await db.modify(deleting: ids, atomic: true, as: Self.user)
        if let failure = result.partialFailure { throw failure }
    }

    /// Deletes a zone.
    func deleteZone(_ zone: ZoneID) async throws {
        let results = try await db.deleteZones([zone], as: Self.user)
        _ = try results[0].result.get()
    }

    /// The record as the live views hold it, or nil.
    func current(_ id: RecordID) throws -> Record? {
        try db.fetch([id], as: Self.user).first.flatMap { try? $0.result.get() }
    }

    /// Digests of every view table.
    func digests() throws -> [ViewDigest] {
        try container.store.environment.read { txn in
            try container.views.tables.all.map { try ViewDigest.of($0, in: txn) }
        }
    }

    /// The location of record `name` in `zone` of the world's database.
    func location(_ name: String, in zone: ZoneID) -> RecordLocation {
        RecordLocation(database: database, recordID: RecordID(recordName: name, zoneID: zone))
    }
}

extension Record {
    /// A record with `fields`, in `zone`.
    static func make(_ type: String, _ name: String, in zone: ZoneID, _ fields: [String: FieldValue] = [:]) -> Record {
        Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone), fields: fields)
    }
}

/// A reference field to `name` in `zone`.
func ref(_ name: String, in zone: ZoneID, _ action: Reference.Action = .none) -> FieldValue {
    .reference(Reference(recordID: RecordID(recordName: name, zoneID: zone), action: action))
}

/// The error `body` throws, as a `CumulusError` (nil if it throws none or another kind).
func cumulusError(_ body: () throws -> Void) -> CumulusError? {
    do {
        try body()
        return nil
    } catch let error as CumulusError {
        return error
    } catch {
        return nil
    }
}
