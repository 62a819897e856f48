import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusViews
import Foundation
import Testing

/// A container in its own temporary directory (``ContainerWorld``), with the little
/// helpers only the engine tests use. Every test builds the world it needs.
final class EngineWorld: ContainerWorld, @unchecked Sendable {
    init(_ label: String = #function) throws {
        try super.init("engine-" + label)
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

    /// Every commit's events, flattened.
    func allEvents() throws -> [Event] {
        try container.store.range(from: 1).flatMap(\.events)
    }
}

func id(_ name: String, in zone: ZoneID) -> RecordID { RecordID(recordName: name, zoneID: zone) }

func ids(_ names: [String], in zone: ZoneID) -> [RecordID] { names.map { RecordID(recordName: $0, zoneID: zone) } }

/// The error of a failed result, or nil.
func failure<T>(_ result: Result<T, CumulusError>) -> CumulusError? {
    if case .failure(let error) = result { return error }
    return nil
}
