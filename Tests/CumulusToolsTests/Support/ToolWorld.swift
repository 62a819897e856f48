import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusTools
import CumulusViews
import Foundation

/// A container in its own temporary directory (``ContainerWorld``, its data in the
/// folder `data`) with the helpers the tools tests share; scratch paths beside it
/// (replays, exports) are removed with it.
final class ToolWorld: ContainerWorld, @unchecked Sendable {
    init(_ label: String = #function) throws {
        try super.init("tools-" + label, dataFolder: "data")
    }

    var store: LogStore { container.store }
    var head: UInt64 { container.store.head.sequence }
    var database: DatabaseID { db.id }

    /// A path inside the world's directory that does not exist yet.
    func scratch(_ name: String) -> String { directory.appending(name) }

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

    /// The location of record `name` in `zone` of the world's database.
    func location(_ name: String, in zone: ZoneID) -> RecordLocation {
        RecordLocation(database: database, recordID: RecordID(recordName: name, zoneID: zone))
    }
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
