import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// A read's `desiredKeys` (`nil` returns every field, `[]` none; system fields always
/// come back; `Docs/DATA-MODEL.md`, "Fetch"), in one place for fetch, query and changes.
struct DesiredKeys: Sendable {
    /// The user fields and encrypted values kept, or `nil` for all of them.
    let wanted: Set<String>?

    init(_ desiredKeys: [String]?) { wanted = desiredKeys.map(Set.init) }

    /// `record` with only the wanted user fields and encrypted values: for records
    /// already read (a query's candidates, read to be filtered and sorted).
    func applied(to record: Record) -> Record {
        guard let wanted else { return record }
        var kept = record
        kept.retainValues { wanted.contains($0) }
        return kept
    }
}
