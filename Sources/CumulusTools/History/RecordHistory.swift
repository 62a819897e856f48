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
                guard let transition = RecordTransition(event), transition.concerns(location) else { continue }
                let new = transition.state(after: state)
                let kind: RecordVersion.Kind
                var changedKeys: [String] = []
                switch transition {
                case .saved(_, _, let keys):
                    kind = state == nil ? .created : .updated
                    changedKeys = keys
                case .deleted(_, let cause):
                    kind = .deleted(cause)
                case .tagBumped(_, _, let source):
                    // A bump of a record that does not exist (yet, in this history) is no version.
                    guard state != nil else { continue }
                    kind = .tagBumped(source: source.recordName)
                case .zoneDeleted:
                    guard state != nil else { continue }
                    kind = .zoneDeleted
                }
                versions.append(RecordVersion(
                    sequence: commit.sequence, eventIndex: index, time: commit.timestamp, user: commit.actor,
                    requestID: commit.requestID, kind: kind, changes: FieldChange.between(state, new),
                    changedKeys: changedKeys, tagBefore: state?.recordChangeTag, tagAfter: new?.recordChangeTag,
                    record: new))
                state = new
            }
        }
        return RecordHistory(location: location, versions: versions)
    }
}
