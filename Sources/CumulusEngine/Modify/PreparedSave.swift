import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// A save's record made ready on the caller's task, before the writer sees it:
/// coerced to the schema in force (``EffectiveSchema/coerced(_:)``), checked
/// against every rule its content must keep (``RecordValidator/checkRules(_:in:)``,
/// ``EffectiveSchema/check(_:)``), its values encoded once
/// (``RecordCodec/encodeKeepingValues(_:)``) and its content derived
/// (``ContentDerivation``: index keys, searchable words, references).
///
/// The writer is one thread for every caller, so what need not be serial is done
/// before it: tokenizing, building index keys, checking and encoding values were
/// about a third of its time per single save. The planner uses the prepared record
/// only if the schema it plans under has the same stamp, and skips those checks and
/// hands the derivation on only for a record whose saved content is exactly this
/// record's (``ModifyPlanner``); the views use the derivation only if that schema is
/// still in force when the record is applied. Anything else is done on the writer,
/// as before: the outcome is the same either way.
struct PreparedSave: Sendable {
    /// The stamp of the schema it was prepared under.
    let schemaStamp: UInt64
    /// The client's record coerced to that schema.
    let record: Record
    /// What its content derives.
    let content: ContentDerivation

    /// Prepares each save of `saves` that has no error yet, in `database`, under the
    /// schema `views` hold now; `nil` for the others (shares, which the system's
    /// type and not the schema governs, failed items, and records that break a rule,
    /// which the planner reports). An unreadable schema prepares nothing: the writer
    /// then does it all, and reports the error itself.
    ///
    /// A large operation is prepared in slices on every core at once: its caller
    /// waits for this before the writer starts on it.
    static func prepare(
        _ saves: [RecordSave], skipping errors: [Int: CumulusError], in database: DatabaseID, views: Views,
        environment: LMDBEnvironment
    ) async -> [PreparedSave?] {
        guard saves.indices.contains(where: { errors[$0] == nil }) else { return saves.map { _ in nil } }
        guard let stamped = try? environment.read({ try views.stampedSchema(SchemaID(database), in: $0, remember: false) })
        else { return saves.map { _ in nil } }
        func prepare(_ range: Range<Int>) -> [PreparedSave?] {
            range.map { index in
                errors[index] == nil ? PreparedSave(saves[index].record, in: database, views: views, schema: stamped) : nil
            }
        }
        // Most operations are one record: they need no count of the cores.
        guard saves.count >= 2 * minimumSlice else { return prepare(saves.indices) }
        let slices = min(cores, saves.count / minimumSlice)
        guard slices > 1 else { return prepare(saves.indices) }
        let size = (saves.count + slices - 1) / slices
        return await withTaskGroup(of: (Int, [PreparedSave?]).self) { group in
            for start in stride(from: 0, to: saves.count, by: size) {
                group.addTask { (start, prepare(start..<min(start + size, saves.count))) }
            }
            var prepared = [PreparedSave?](repeating: nil, count: saves.count)
            for await (start, slice) in group { prepared.replaceSubrange(start..<start + slice.count, with: slice) }
            return prepared
        }
    }

    /// Saves below which an operation is prepared on its caller's task alone: a
    /// task's start costs more than preparing a few records.
    static let minimumSlice = 32

    /// The cores this process may use, read once. On Linux, Foundation reads the
    /// cgroup's CPU quota and cpuset files at every `activeProcessorCount` (open, read,
    /// close): asked per save, that was 4.5 % of the process's CPU at 64 callers (perf).
    static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// `record` prepared under `schema`, or `nil` if it is a share or breaks a rule.
    private init?(_ record: Record, in database: DatabaseID, views: Views, schema: StampedSchema) {
        guard !Share.isShareType(record.recordType) else { return nil }
        var coerced = schema.schema.coerced(record)
        do {
            try RecordValidator.checkRules(coerced, in: database.scope)
            try schema.schema.check(coerced)
            _ = try RecordCodec.encodeKeepingValues(&coerced)
        } catch {
            return nil
        }
        schemaStamp = schema.stamp
        self.record = coerced
        content = views.deriveContent(of: coerced, in: database, schema: schema)
    }

    /// Whether `saved`, the record a save planned, holds exactly this record's
    /// content (type, user fields, encrypted values, parent): what the derivation
    /// was made from. True of a new record and of a replacement; an update onto a
    /// stored record only when the client sent every field.
    func hasContent(of saved: Record) -> Bool {
        // Shared storage makes the dictionaries' comparison one pointer's for a new
        // record (the merge takes the client's fields as they are).
        saved.recordType == record.recordType && saved.parent == record.parent
            && saved.fields == record.fields && saved.encryptedValues == record.encryptedValues
    }
}
