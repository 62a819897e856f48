import CumulusLog
import CumulusModel

/// Every version of one record, from the record history index: who, when, which
/// keys changed from what to what, tag bumps, and how it ended. Reads only the
/// commits that touched the record or deleted its zone, so its cost follows the
/// record's versions, not the log's length.
public struct RecordHistory: Sendable {
    /// The record.
    public var location: RecordLocation
    /// Its versions, oldest first.
    public var versions: [RecordVersion]

    /// The record as of the last version (`nil`: it did not exist then).
    public var state: Record? { versions.last?.record }

    /// Loads the history of `location` through sequence `through`.
    public static func load(_ location: RecordLocation, in store: LogStore, through: UInt64 = .max) throws
        -> RecordHistory
    {
        let id = location.recordID
        let own = try store.recordHistory(location.database, id, through: through)
        // Zone deletions end a record without naming it; only those matter here.
        let zone = try store.zoneHistory(location.database, id.zoneID, through: through)
        let sequences = Array(Set(own.map(\.sequence) + zone.map(\.sequence))).sorted()
        let commits = try store.commits(at: sequences)
        var versions: [RecordVersion] = []
        var state: Record?
        for commit in commits {
            for (index, event) in commit.events.enumerated() {
                func version(_ kind: RecordVersion.Kind, _ new: Record?, changedKeys: [String] = []) -> RecordVersion {
                    RecordVersion(
                        sequence: commit.sequence, eventIndex: index, time: commit.timestamp, user: commit.actor,
                        requestID: commit.requestID, kind: kind, changes: FieldChange.between(state, new),
                        changedKeys: changedKeys, tagBefore: state?.recordChangeTag, tagAfter: new?.recordChangeTag,
                        record: new)
                }
                switch event {
                case .recordSaved(let database, let record, let changedKeys)
                where database == location.database && record.recordID == id:
                    versions.append(version(state == nil ? .created : .updated, record, changedKeys: changedKeys))
                    state = record
                case .recordDeleted(let database, let recordID, _, let cause)
                where database == location.database && recordID == id:
                    versions.append(version(.deleted(cause), nil))
                    state = nil
                case .changeTagBumped(let database, let recordID, let changeTag, let source)
                where database == location.database && recordID == id:
                    guard var bumped = state else { continue }
                    bumped.recordChangeTag = changeTag
                    versions.append(version(.tagBumped(source: source.recordName), bumped))
                    state = bumped
                case .zoneDeleted(let database, let zoneID) where database == location.database && zoneID == id.zoneID:
                    guard state != nil else { continue }
                    versions.append(version(.zoneDeleted, nil))
                    state = nil
                default:
                    continue
                }
            }
        }
        return RecordHistory(location: location, versions: versions)
    }
}
