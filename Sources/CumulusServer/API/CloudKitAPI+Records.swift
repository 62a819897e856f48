import CumulusEngine
import CumulusModel
import Foundation

/// `records/modify`, `records/lookup`, `records/query`, `records/changes` (`Docs/HTTP-API.md`, "Routes").
extension CloudKitAPI {
    /// The zone a request addresses (`zoneID`, default zone when absent).
    func zone(_ body: some JSONReadable) throws -> ZoneID {
        guard let json = body["zoneID"], !json.isNull else { return .default }
        return try ZoneID(wire: json.json(), field: "zoneID")
    }

    func desiredKeys<JSON: JSONReadable>(_ json: JSON?) throws -> Set<String>? {
        guard let json, !json.isNull else { return nil }
        guard let items = try json.arrayValue else { throw CumulusError(.invalidArguments, "'desiredKeys' must be a list of field names") }
        return Set(try items.map { item in
            guard let key = item.stringValue else { throw CumulusError(.invalidArguments, "'desiredKeys' must hold strings") }
            return key
        })
    }

    func modifyRecords(_ context: Context) async throws -> APIResponse {
        let body = context.body
        guard let operations = try body["operations"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'operations' must be a list of {operationType, record}")
        }
        try checkItemCount(operations.count, of: "operations")
        let zone = try zone(body)
        let topKeys = try desiredKeys(body["desiredKeys"])
        var saves: [RecordSave] = []
        var deletes: [RecordDelete] = []
        // Where each operation's result lands, in request order.
        enum Slot { case save(Int, creating: Bool, keys: Set<String>?), delete(Int, name: String) }
        var slots: [Slot] = []
        for (index, operation) in operations.enumerated() {
            guard let type = operation["operationType"]?.stringValue else {
                throw CumulusError(.invalidArguments, "operation \(index) needs an 'operationType'")
            }
            guard let recordJSON = try operation["record"]?.json() else {
                throw CumulusError(.invalidArguments, "operation \(index) needs a 'record'")
            }
            let keys = try desiredKeys(operation["desiredKeys"]) ?? topKeys
            let mode: SaveMode
            switch type {
            case "create": mode = .create
            case "update": mode = .update
            case "forceUpdate": mode = .forceUpdate
            case "replace": mode = .replace
            case "forceReplace": mode = .forceReplace
            case "delete", "forceDelete":
                let record = try RecordJSON.decode(recordJSON, zone: zone, requireType: false)
                // A tag makes `delete` conditional; without one it deletes unconditionally, as
                // `forceDelete` does, because CloudKit clients (MistKit among them) treat the tag
                // on delete as optional and send none.
                if type == "delete", let tag = record.recordChangeTag {
                    deletes.append(RecordDelete(record.recordID, mode: .ifTagMatches(tag)))
                } else {
                    deletes.append(RecordDelete(record.recordID, mode: .force))
                }
                slots.append(.delete(deletes.count - 1, name: record.recordID.recordName))
                continue
            default:
                throw CumulusError(
                    .invalidArguments,
                    "operation \(index): unknown operationType '\(type)'; use create, update, forceUpdate, replace, forceReplace, delete or forceDelete")
            }
            let record = try RecordJSON.decode(recordJSON, zone: zone, requireType: true)
            if (mode == .update || mode == .replace) && record.recordChangeTag == nil {
                throw CumulusError(.invalidArguments, "operation \(index): '\(type)' needs the record's recordChangeTag (or use force\(type.prefix(1).uppercased() + type.dropFirst()))")
            }
            let share = Share.isShareType(record.recordType) ? try ShareJSON.definition(recordJSON) : nil
            saves.append(RecordSave(record, mode: mode, share: share))
            slots.append(.save(saves.count - 1, creating: mode == .create, keys: keys))
        }
        let atomic = body["atomic"]?.boolValue ?? true
        let result = try await context.database.modify(
            ModifyOperation(
                saves: saves, deletes: deletes, atomic: atomic, requestID: context.requestID, itemLimit: limits.itemsPerRequest,
                cpuLimit: limits.requestCPU, recordQuota: limits.recordQuota),
            as: context.caller.user)
        var records = Self.recordsAnswer(capacity: 512 * slots.count)
        for slot in slots {
            switch slot {
            case .save(let index, let creating, let keys):
                let item = result.saveResults[index]
                switch item.result {
                case .success(let record):
                    try writeRecord(record, writingOptions(keys, context), context, into: &records)
                case .failure(let error):
                    records.value(itemError(error, name: item.recordID.recordName, creating: creating))
                }
            case .delete(let index, let name):
                switch result.deleteResults[index].result {
                case .success:
                    records.value(["recordName": .string(name), "deleted": true])
                case .failure(let error):
                    records.value(itemError(error, name: name))
                }
            }
        }
        Self.closeRecords(&records)
        return APIResponse(written: records.bytes)
    }

    func lookupRecords(_ context: Context) throws -> APIResponse {
        guard let requested = try context.body["records"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'records' must be a list of {recordName}")
        }
        try checkItemCount(requested.count, of: "records")
        let zone = try zone(context.body)
        let topKeys = try desiredKeys(context.body["desiredKeys"])
        // The request's options once; an entry that names its own desired keys gets
        // options of its own (a download-URL closure and the keys' bytes per entry were
        // two allocations a record).
        let shared = writingOptions(topKeys, context)
        var ids: [RecordID] = []
        var options: [RecordJSONWriter.Options] = []
        ids.reserveCapacity(requested.count)
        options.reserveCapacity(requested.count)
        for (index, entry) in requested.enumerated() {
            guard let name = entry["recordName"]?.stringValue else {
                throw CumulusError(.invalidArguments, "records[\(index)] needs a 'recordName'")
            }
            ids.append(RecordID(recordName: name, zoneID: zone))
            if let own = try desiredKeys(entry["desiredKeys"]) {
                var entryOptions = shared
                entryOptions.desiredKeys = own
                options.append(entryOptions)
            } else {
                options.append(shared)
            }
        }
        // Read in one transaction until the records written take the response's bytes;
        // the rest are not read at all: each is told to ask again. Each record is
        // written from its stored bytes inside the read.
        var records = Self.recordsAnswer(capacity: 2048 * min(ids.count, 20))
        var bytes = 0
        let handed = try context.database.fetchStored(ids, as: context.caller.user, while: { index, item in
            switch item {
            case .success(let stored):
                bytes += stored.count
                // A record whose stored values turn out damaged is that item's error.
                do {
                    try writeRecord(stored: stored, options[index], context, into: &records)
                } catch let error as CumulusError {
                    records.value(itemError(error, name: ids[index].recordName))
                }
            case .failure(let error): records.value(itemError(error, name: ids[index].recordName))
            }
            return bytes < limits.responseBytes
        })
        if handed < ids.count {
            metrics?.recordLimitHit(.recordsPerResponse)
            for id in ids[handed...] {
                records.value(itemError(
                    CumulusError(.limitExceeded, "this response already holds \(bytes) bytes of records; look this record up again"),
                    name: id.recordName))
            }
        }
        Self.closeRecords(&records)
        return APIResponse(written: records.bytes)
    }

    func queryRecords(_ context: Context) throws -> APIResponse {
        let body = context.body
        let limit = try body["resultsLimit"].map { value -> Int in
            guard let number = value.int64Value, number > 0 else {
                throw CumulusError(.invalidArguments, "'resultsLimit' must be a positive integer")
            }
            return Int(min(number, Int64(limits.itemsPerRequest)))
        } ?? limits.itemsPerRequest
        let keys = try desiredKeys(body["desiredKeys"]).map(Array.init)
        // The page is written from its stored bytes inside the read that found it.
        var records = Self.recordsAnswer(capacity: 64 << 10)
        let options = writingOptions(nil, context)
        let write = { (page: StoredRecordPage) throws in try self.writePage(page, options, context, into: &records) }
        let cursor: QueryCursor?
        if let marker = body["continuationMarker"]?.stringValue {
            guard let marked = QueryCursor(base64: marker) else {
                throw CumulusError(.invalidArguments, "'continuationMarker' is not one this server issued")
            }
            cursor = try context.database.query(
                continuing: marked, resultsLimit: limit, desiredKeys: keys, scanLimit: limits.queryScanRecords,
                byteLimit: limits.responseBytes, cpuLimit: limits.requestCPU, as: context.caller.user, write)
        } else {
            guard let queryJSON = body["query"] else { throw CumulusError(.invalidArguments, "'query' is required") }
            let zoneGiven = body["zoneID"].map { !$0.isNull } ?? false
            let zone = try zone(body)
            let query = try Query(wire: queryJSON.json(), defaultZone: zone)
            // zoneWide searches every zone; it is ignored when a zone is named.
            let everyZone = !zoneGiven && (body["zoneWide"]?.boolValue ?? false)
            cursor = try context.database.query(
                query, in: everyZone ? nil : zone, resultsLimit: limit, desiredKeys: keys,
                scanLimit: limits.queryScanRecords, byteLimit: limits.responseBytes, cpuLimit: limits.requestCPU,
                as: context.caller.user, write)
        }
        Self.closeRecords(&records, cursor.map { ["continuationMarker": .string($0.base64)] } ?? [:])
        return APIResponse(written: records.bytes)
    }

    func recordChanges(_ context: Context) async throws -> APIResponse {
        guard context.body["zoneID"] != nil else { throw CumulusError(.invalidArguments, "'zoneID' is required") }
        let zone = try zone(context.body)
        var json = JSONWriter(capacity: 64 << 10)
        _ = try await writeZonePage(context, zone: zone, options: context.body, byteLimit: limits.responseBytes, into: &json)
        return APIResponse(written: json.bytes)
    }

    /// One zone's changes as `records/changes` and `changes/zone` answer them, ending
    /// once its records take `byteLimit` bytes as stored, written into `json` as one
    /// object (its records first, as in ``recordsAnswer(capacity:)``); returns how
    /// many records it holds and their bytes as stored. When it throws, what it wrote
    /// is for the caller to roll back.
    func writeZonePage(
        _ context: Context, zone: ZoneID, options: some JSONReadable, byteLimit: Int, into json: inout JSONWriter
    )
        async throws -> (count: Int, storedBytes: Int)
    {
        var token: ChangeToken?
        if let string = options["syncToken"]?.stringValue {
            guard let parsed = ChangeToken(base64: string) else {
                throw CumulusError(.changeTokenExpired, "the syncToken is not one this server issued; fetch again without one")
            }
            token = parsed
        }
        let limit: Int? = try options["resultsLimit"].map { value -> Int in
            guard let number = value.int64Value, number > 0 else {
                throw CumulusError(.invalidArguments, "'resultsLimit' must be a positive integer")
            }
            return Int(min(number, Int64(Database.maxChangesLimit)))
        }
        let keys = try desiredKeys(options["desiredKeys"]).map(Array.init)
        // The changed records are written from their stored bytes inside the page's read.
        Self.openRecords(&json)
        var changedCount = 0
        let options = writingOptions(nil, context)
        let changes = try await context.database.fetchZoneChanges(
            zone, since: token, resultsLimit: limit, desiredKeys: keys, catchUpTimeout: context.catchUpWait,
            byteLimit: byteLimit, as: context.caller.user
        ) { page in
            try self.writePage(page, options, context, into: &json)
            changedCount = page.records.count
        }
        for deletion in changes.deleted { json.value(RecordJSON.deletion(deletion)) }
        var page: [String: JSONValue] = [
            "zoneID": context.database.storedZoneID(zone).wireJSON,
            "syncToken": .string(changes.token.base64),
            "moreComing": .bool(changes.moreComing),
            "reverse": false,
        ]
        if let client = changes.clientChangeTokenData {
            page["clientChangeTokenData"] = .string(Data(client).base64EncodedString())
        }
        Self.closeRecords(&json, page)
        return (changedCount + changes.deleted.count, changes.storedBytes)
    }
}
