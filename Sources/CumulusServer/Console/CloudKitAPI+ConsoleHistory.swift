import CumulusLog
import CumulusModel
import CumulusTools

/// A record's timeline for the console (`GET /console/api/history?record=NAME`, operators;
/// `zone` and `database` narrow it as `cumulus history`'s options do): every version, as
/// ``RecordHistory`` reads it for `cumulus history` — who, when, the request, the keys
/// changed from what to what (encrypted values never shown), tag bumps, and how it ended,
/// a cascade naming the owner whose deletion took it.
extension CloudKitAPI {
    func consoleHistory(_ request: APIRequest) throws -> JSONValue {
        let scope = ScopeMatcher(database: request.query["database"].nonEmpty, zone: request.query["zone"].nonEmpty)
        let store = container.store
        let location = try scope.locate(request.query["record"] ?? "", in: store)
        let history = try RecordHistory.load(location, in: store)
        let versions: [JSONValue] = history.versions.map { version in
            var entry: [String: JSONValue] = [
                "sequence": .int(Int64(clamping: version.sequence)), "time": .string(ToolTime.iso(version.time)),
                "user": .string(version.user), "requestID": .string(version.requestID), "kind": .string("\(version.kind)"),
                // A deletion removes every field: listing them all again says nothing new.
                "changes": .array(version.record == nil ? [] : version.changes.map { .string("\($0)") }),
            ]
            if let tag = version.tagBefore { entry["tagBefore"] = .string(tag) }
            if let tag = version.tagAfter { entry["tagAfter"] = .string(tag) }
            if case .deleted(.cascade(let owner)) = version.kind {
                entry["cascadeOwner"] = .string(owner.recordName)
                entry["cascadeZone"] = .string(owner.zoneID.zoneName)
            }
            return .object(entry)
        }
        return [
            "record": .string(location.recordID.recordName), "zone": .string("\(location.recordID.zoneID)"),
            "database": .string("\(location.database)"), "exists": .bool(history.state != nil),
            "versions": .array(versions),
        ]
    }
}
