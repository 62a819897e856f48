import CumulusLog
import CumulusModel

/// What deleting one record would do now: the records it would take (itself, then each
/// record a chain of `deleteSelf` references takes with it, in the order the cascade
/// reaches them), or why the delete would fail. Made by planning the delete exactly as
/// ``Database/modify(_:as:)`` would, against a read transaction, and appending nothing:
/// what the console shows before a delete ("deleting this deletes N records").
///
/// Only records the caller may read are named: a cascade may reach records hidden from
/// them (another user's record in the public database, a type without a READ grant),
/// and a preview must not tell them those exist.
public struct DeletionPreview: Sendable {
    /// One record the delete would take.
    public struct Victim: Sendable, Equatable {
        /// The record.
        public var recordID: RecordID
        /// Its type.
        public var recordType: String
        /// Why it goes: `direct` for the record asked about, `cascade(owner:)` for one
        /// a `deleteSelf` reference takes.
        public var cause: DeleteCause
    }

    /// The record asked about.
    public var recordID: RecordID
    /// The records the delete would take that the caller may read; empty when it fails.
    public var victims: [Victim]
    /// Why the delete would fail (the record is gone, a validating reference holds it,
    /// no write access), or `nil`.
    public var failure: CumulusError?
}

extension Database {
    /// What deleting `recordID` as `actor` would take now (``DeletionPreview``). Throws
    /// only for the request as a whole (no write access to this database at all).
    public func previewDeletion(of recordID: RecordID, as actor: String?) async throws -> DeletionPreview {
        let planner = try await planner(for: ModifyOperation(deletes: [RecordDelete(recordID)]), as: actor)
        let store = container.store
        let (request, result) = try store.environment.read { txn in
            try planner.plan(LogWriter.PlanContext(transaction: txn, sequence: store.head.sequence + 1, now: .now()))
        }
        let asked = RecordID(recordName: recordID.recordName, zoneID: storedZoneID(recordID.zoneID))
        if case .failure(let error)? = result.deleteResults.first?.result {
            return DeletionPreview(recordID: asked, victims: [], failure: error)
        }
        var victims: [DeletionPreview.Victim] = []
        for event in request?.events ?? [] {
            guard case .recordDeleted(_, let id, let type, let cause) = event else { continue }
            victims.append(DeletionPreview.Victim(recordID: id, recordType: type, cause: cause))
        }
        // What the caller may not read stays unnamed and uncounted.
        let readable = try fetch(victims.map(\.recordID), desiredKeys: [], as: actor)
        let shown = Set(readable.compactMap { item in (try? item.result.get()).map { _ in item.recordID } })
        return DeletionPreview(recordID: asked, victims: victims.filter { shown.contains($0.recordID) }, failure: nil)
    }
}
