import CumulusLog
import CumulusModel

/// How operators name databases and zones on the command line, and the matching.
///
/// A database matches `D` when `D` is its full name as the tools print it
/// (`container/environment/scope[/owner]`), its container, or its scope
/// (`public`, `private`, `shared`). A zone matches `Z` when `Z` is its name or
/// `name:owner`.
public struct ScopeMatcher: Sendable, Hashable {
    /// The database named, if any (`nil`: any).
    public var database: String?
    /// The zone named, if any (`nil`: any).
    public var zone: String?

    /// A matcher; `nil` parts match everything.
    public init(database: String? = nil, zone: String? = nil) {
        self.database = database
        self.zone = zone
    }

    /// Whether `database` is the one named.
    public func matches(_ database: DatabaseID) -> Bool {
        guard let name = self.database else { return true }
        return name == database.description || name == database.container || name == database.scope.description
    }

    /// Whether `zone` is the one named.
    public func matches(_ zone: ZoneID) -> Bool {
        guard let name = self.zone else { return true }
        return name == zone.zoneName || name == zone.description
    }

    /// Whether both match.
    public func matches(_ database: DatabaseID, _ zone: ZoneID) -> Bool {
        matches(database) && matches(zone)
    }

    /// The record named `recordName` in the one zone the log knows that matches and
    /// holds it. `unknownItem` when no zone ever held it; `invalidArguments`, naming
    /// the candidates, when several did.
    public func locate(_ recordName: String, in store: LogStore) throws -> RecordLocation {
        guard !recordName.isEmpty else { throw CumulusError(.invalidArguments, "a record name is required") }
        var found: [RecordLocation] = []
        for zone in try store.zonesEverTouched() where matches(zone.database, zone.zoneID) {
            let id = RecordID(recordName: recordName, zoneID: zone.zoneID)
            if try !store.recordHistory(zone.database, id, through: .max).isEmpty {
                found.append(RecordLocation(database: zone.database, recordID: id))
            }
        }
        guard let first = found.first else {
            throw CumulusError(
                .unknownItem, "no record named \(recordName) was ever saved\(scopeDescription) in this log")
        }
        guard found.count == 1 else {
            let names = found.map { "--database \($0.database) --zone \($0.recordID.zoneID)" }
            throw CumulusError(
                .invalidArguments,
                "record \(recordName) exists in \(found.count) zones; name one: " + names.joined(separator: " | "))
        }
        return first
    }

    private var scopeDescription: String {
        var parts: [String] = []
        if let zone { parts.append("zone \(zone)") }
        if let database { parts.append("database \(database)") }
        return parts.isEmpty ? "" : " in " + parts.joined(separator: ", ")
    }
}
