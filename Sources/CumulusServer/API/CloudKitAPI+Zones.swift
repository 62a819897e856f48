import CumulusEngine
import CumulusModel
import Foundation

/// `zones/list`, `zones/lookup`, `zones/modify`, `zones/changes`, `changes/database`,
/// `changes/zone` (`Docs/HTTP-API.md`, "Routes").
extension CloudKitAPI {
    static func zoneJSON(_ zone: Zone) -> JSONValue {
        ["zoneID": zone.zoneID.wireJSON, "atomic": .bool(zone.capabilities.contains(.atomic))]
    }

    static func zoneError(_ zoneID: ZoneID, _ error: CumulusError) -> JSONValue {
        [
            "zoneID": zoneID.wireJSON, "serverErrorCode": .string(ServerErrorCode(error).name),
            "reason": .string(error.message),
        ]
    }

    func listZones(_ context: Context) throws -> APIResponse {
        let zones = try context.database.allZones(as: context.caller.user)
        return APIResponse(json: ["zones": .array(zones.map(Self.zoneJSON))])
    }

    func lookupZones(_ context: Context) throws -> APIResponse {
        guard let requested = try context.body["zones"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'zones' must be a list of zone IDs")
        }
        try checkItemCount(requested.count, of: "zones")
        let ids = try requested.enumerated().map { index, entry in
            try ZoneID(wire: (entry["zoneID"] ?? entry).json(), field: "zones[\(index)]")
        }
        let results = try context.database.fetchZones(ids, as: context.caller.user)
        return APIResponse(json: ["zones": .array(results.map { item in
            switch item.result {
            case .success(let zone): Self.zoneJSON(zone)
            case .failure(let error): Self.zoneError(item.zoneID, error)
            }
        })])
    }

    func modifyZones(_ context: Context) async throws -> APIResponse {
        guard let operations = try context.body["operations"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'operations' must be a list of {operationType, zone}")
        }
        try checkItemCount(operations.count, of: "operations")
        // Every operation is read before any is planned: one commit holds them all.
        let planned = try operations.enumerated().map { index, operation -> ZoneOperation in
            guard let type = operation["operationType"]?.stringValue else {
                throw CumulusError(.invalidArguments, "operation \(index) needs an 'operationType'")
            }
            guard let zoneJSON = operation["zone"] else { throw CumulusError(.invalidArguments, "operation \(index) needs a 'zone'") }
            let zoneID = try ZoneID(wire: (zoneJSON["zoneID"] ?? zoneJSON).json(), field: "operations[\(index)].zone")
            switch type {
            case "create": return .save(zoneID)
            case "delete": return .delete(zoneID)
            default:
                throw CumulusError(.invalidArguments, "operation \(index): unknown operationType '\(type)'; use create or delete")
            }
        }
        let results = try await context.database.modifyZones(planned, as: context.caller.user, requestID: context.requestID)
        let answers: [JSONValue] = results.map { item in
            switch item.result {
            case .success(let zone?): Self.zoneJSON(zone)
            case .success(nil): ["zoneID": item.operation.zoneID.wireJSON, "deleted": true]
            case .failure(let error): Self.zoneError(item.operation.zoneID, error)
            }
        }
        return APIResponse(json: ["zones": .array(answers)])
    }

    /// `zones/changes` (token key `metaSyncToken`, though both keys are accepted and
    /// answered, as clients differ) and `changes/database` (`syncToken`).
    func zoneListChanges(_ context: Context, metaKeys: Bool) async throws -> APIResponse {
        let body = context.body
        var token: ChangeToken?
        if let string = (body["metaSyncToken"] ?? body["syncToken"])?.stringValue {
            guard let parsed = ChangeToken(base64: string) else {
                throw CumulusError(.changeTokenExpired, "the sync token is not one this server issued; fetch again without one")
            }
            token = parsed
        }
        let limit = body["resultsLimit"]?.int64Value.map { Int(max(1, min($0, Int64(Database.maxChangesLimit)))) }
        let changes = try await context.database.fetchDatabaseChanges(
            since: token, resultsLimit: limit, catchUpTimeout: context.catchUpWait, as: context.caller.user)
        let zones: [JSONValue] = changes.changedZones.map { ["zoneID": $0.wireJSON] }
            + changes.deletedZones.map { ["zoneID": $0.wireJSON, "deleted": true] }
        let tokenString = JSONValue.string(changes.token.base64)
        var answer: [String: JSONValue] = ["zones": .array(zones), "moreComing": .bool(changes.moreComing), "syncToken": tokenString]
        if metaKeys { answer["metaSyncToken"] = tokenString }
        return APIResponse(json: .object(answer))
    }

    func zoneChanges(_ context: Context) async throws -> APIResponse {
        guard let requested = try context.body["zones"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'zones' must be a list of {zoneID, syncToken?}")
        }
        try checkItemCount(requested.count, of: "zones")
        // The request's defaults for every zone, built once (not once a zone: each
        // build counts against the body's memory, and each lookup reads the body).
        var defaults: [String: JSONValue] = [:]
        for key in ["resultsLimit", "desiredKeys"] {
            if let value = context.body[key] { defaults[key] = try value.json() }
        }
        // The zones' pages are written into the answer's own buffer.
        var answers = JSONWriter(capacity: 64 << 10)
        answers.beginObject()
        answers.key("zones")
        answers.beginArray()
        // The response's records are shared out in order: a zone gets what the ones
        // before it left, and a zone that gets nothing is told to ask again, as
        // CloudKit tells a client whose request is too large.
        var budget = limits.recordsPerResponse
        var bytes = limits.responseBytes
        var budgetSpent = false  // counted once per response
        for (index, entry) in requested.enumerated() {
            let entryJSON = try entry.json()
            guard let zoneJSON = entryJSON["zoneID"] else { throw CumulusError(.invalidArguments, "zones[\(index)] needs a 'zoneID'") }
            // Answered as stored, errors included: never the owner placeholder.
            let zoneID = context.database.storedZoneID(try ZoneID(wire: zoneJSON, field: "zones[\(index)].zoneID"))
            guard budget > 0, bytes > 0 else {
                if !budgetSpent { metrics?.recordLimitHit(.recordsPerResponse) }
                budgetSpent = true
                answers.value(Self.zoneError(zoneID, CumulusError(
                    .limitExceeded,
                    "this response already holds \(limits.recordsPerResponse - budget) records of "
                        + "\(limits.responseBytes - bytes) bytes; ask for this zone's changes again")))
                continue
            }
            var options = entryJSON.objectValue ?? [:]
            options.merge(defaults) { own, _ in own }
            // A limit the zone asked for is kept when it fits (a bad one is its error).
            let asked = options["resultsLimit"].map { $0.int64Value.map { Int(clamping: $0) } }
            switch asked {
            case .none where budget < Database.defaultChangesLimit: options["resultsLimit"] = .int(Int64(budget))
            case .some(.some(let limit)) where limit > budget: options["resultsLimit"] = .int(Int64(budget))
            default: break
            }
            let mark = answers.count
            let comma = answers.separatorPending
            do {
                let page = try await writeZonePage(context, zone: zoneID, options: JSONValue.object(options), byteLimit: bytes, into: &answers)
                budget -= page.count
                bytes -= page.storedBytes
            } catch let error as CumulusError {
                answers.rollBack(to: mark, needsComma: comma)
                answers.value(Self.zoneError(zoneID, error))
            }
        }
        answers.endArray()
        answers.endObject()
        return APIResponse(written: answers.bytes)
    }
}
