import CumulusLog
import CumulusModel

/// `bisect`: the first commit after which a query's result changed in a named way —
/// to find the event that broke an invariant (say "no item is done with a priority
/// above 3": `--query "done == 1 AND priority > 3"`, the default `--when non-empty`).
///
/// Rather than rebuilding the state at O(log n) probe points (each a replay), it
/// walks the log once, keeping the set of records that match the query as each
/// event applies — exact, and linear in the log with a small constant. Only the
/// query's record type is kept, so memory follows the matching records.
public enum Bisector {
    /// What `bisect` found.
    public struct Finding: Sendable, Hashable {
        /// The commit after which the result changed as asked.
        public var sequence: UInt64
        /// Matching records before it.
        public var countBefore: Int
        /// Matching records after it.
        public var countAfter: Int
        /// The records that entered or left the result in that commit.
        public var changed: [RecordLocation]
        /// The commit.
        public var commit: Commit
    }

    /// Searches commits `after`+1 … the head for the first whose events change the
    /// result of `query` (in databases and zones `scope` matches) as `condition`
    /// says; `nil` if none does. `progress` gets each sequence read.
    public static func search(
        _ store: LogStore, query: Query, scope: ScopeMatcher = ScopeMatcher(), condition: BisectCondition,
        after: UInt64 = 0, progress: ((UInt64) throws -> Void)? = nil
    ) throws -> Finding? {
        var matching = Set<RecordLocation>()
        var finding: Finding?
        try store.commits(from: 1) { commit in
            try progress?(commit.sequence)
            let before = matching.count
            var entered = Set<RecordLocation>()
            var left = Set<RecordLocation>()
            func set(_ location: RecordLocation, _ matches: Bool) {
                if matches {
                    if matching.insert(location).inserted { entered.insert(location) }
                } else if matching.remove(location) != nil {
                    left.insert(location)
                }
            }
            for event in commit.events {
                guard let database = event.database, scope.matches(database), let transition = RecordTransition(event)
                else { continue }
                switch transition {
                case .saved(let location, let record, _) where scope.matches(location.recordID.zoneID):
                    set(location, QueryEvaluator.matches(record, query))
                case .deleted(let location, _) where scope.matches(location.recordID.zoneID):
                    set(location, false)
                case .zoneDeleted(_, let zoneID) where scope.matches(zoneID):
                    for location in matching where transition.concerns(location) { set(location, false) }
                case .saved, .deleted, .zoneDeleted, .tagBumped:
                    // A tag bump changes no field a query can filter on: membership stays.
                    continue
                }
            }
            guard commit.sequence > after, condition.holds(before: before, after: matching.count) else { return true }
            finding = Finding(
                sequence: commit.sequence, countBefore: before, countAfter: matching.count,
                changed: entered.union(left).sorted { $0.recordID < $1.recordID }, commit: commit)
            return false
        }
        return finding
    }
}
