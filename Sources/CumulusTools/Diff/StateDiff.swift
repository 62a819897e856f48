import CumulusLog
import CumulusModel

/// What changed between two points of the log: records created, deleted (with
/// causes) and changed, field by field — the net effect, so a record created and
/// deleted again in between does not appear.
///
/// Reads the commits between the points to learn which records they touched (a
/// zone deletion touches every record the zone ever held), then each record's
/// state at both points from the record history index.
public enum StateDiff {
    /// The differences between the state right after commit `from` and right after
    /// commit `to` (`from` ≤ `to`), sorted by database then record ID.
    public static func between(_ from: UInt64, _ to: UInt64, in store: LogStore, scope: ScopeMatcher = ScopeMatcher())
        throws -> [RecordDifference]
    {
        guard from <= to else {
            throw CumulusError(.invalidArguments, "the first point (#\(from)) is after the second (#\(to)); swap them")
        }
        let head = try store.lastSequence()
        guard to <= head else {
            throw CumulusError(.invalidArguments, "sequence \(to) is past the head of the log (\(head))")
        }
        var touched: [RecordLocation: UInt64] = [:]
        var deletedZones: [ZoneKey: UInt64] = [:]
        try store.commits(from: from + 1, through: to) { commit in
            for event in commit.events {
                guard let database = event.database, scope.matches(database) else { continue }
                if case .zoneDeleted(_, let zoneID) = event, scope.matches(zoneID) {
                    deletedZones[ZoneKey(database, zoneID)] = commit.sequence
                } else if let id = event.recordID, scope.matches(id.zoneID) {
                    touched[RecordLocation(database: database, recordID: id)] = commit.sequence
                }
            }
            return true
        }
        for (zone, sequence) in deletedZones {
            for name in try store.recordNamesEverIn(zone.database, zone.zoneID) {
                let location = RecordLocation(database: zone.database, recordID: RecordID(recordName: name, zoneID: zone.zoneID))
                touched[location] = max(touched[location] ?? 0, sequence)
            }
        }
        var differences: [RecordDifference] = []
        for (location, last) in touched {
            let history = try RecordHistory.load(location, in: store, through: to)
            let before = history.versions.last { $0.sequence <= from }?.record
            let after = history.state
            let touchedLast = history.versions.last { $0.sequence > from }?.sequence ?? last
            switch (before, after) {
            case (nil, nil):
                continue
            case (nil, let record?):
                differences.append(RecordDifference(
                    location: location, kind: .created, changes: FieldChange.between(nil, record),
                    recordType: record.recordType, tagBefore: nil, tagAfter: record.recordChangeTag,
                    lastSequence: touchedLast))
            case (let record?, nil):
                let ending = history.versions.last?.kind ?? .deleted(.direct)
                differences.append(RecordDifference(
                    location: location, kind: .deleted(cause: ending), changes: FieldChange.between(record, nil),
                    recordType: record.recordType, tagBefore: record.recordChangeTag, tagAfter: nil,
                    lastSequence: touchedLast))
            case (let old?, let new?):
                let changes = FieldChange.between(old, new)
                guard !changes.isEmpty || old.recordType != new.recordType || old.recordChangeTag != new.recordChangeTag
                else { continue }
                differences.append(RecordDifference(
                    location: location, kind: .changed, changes: changes, recordType: new.recordType,
                    tagBefore: old.recordChangeTag, tagAfter: new.recordChangeTag, lastSequence: touchedLast))
            }
        }
        return differences.sorted {
            $0.location.database != $1.location.database
                ? $0.location.database < $1.location.database : $0.location.recordID < $1.location.recordID
        }
    }
}
