import CumulusModel

/// Combines the client's copy of a record with the server's according to a save
/// mode (`Docs/DATA-MODEL.md`, "Modify operations"): the conflict checks and which
/// fields win. Pure; system fields are the planner's business.
enum RecordMerger {
    /// The record's new user fields, encrypted values and parent; the rest of the
    /// result is the server's copy (or a fresh record). Throws the item's error:
    /// `serverRecordChanged` (carrying the server's record), `unknownItem`, or
    /// `invalidArguments` for a change of record type.
    static func merge(_ client: Record, onto existing: Record?, mode: SaveMode) throws -> Record {
        guard let existing else {
            if !mode.createsMissing {
                throw CumulusError(
                    .unknownItem, "record \(client.recordID.recordName) does not exist; create it first",
                    recordID: client.recordID)
            }
            if mode == .ifServerRecordUnchanged, client.recordChangeTag != nil {
                throw CumulusError(
                    .unknownItem,
                    "record \(client.recordID.recordName) was deleted on the server since this copy was fetched",
                    recordID: client.recordID)
            }
            var fresh = Record(recordType: client.recordType, recordID: client.recordID)
            // As the client's record holds them: values encoded ahead stay encoded.
            fresh.setStoredValues(from: client)
            fresh.parent = client.parent
            fresh.clearChangedKeys()
            return fresh
        }
        if mode == .create {
            throw CumulusError(
                .serverRecordChanged, "record \(client.recordID.recordName) already exists",
                recordID: client.recordID, serverRecord: existing)
        }
        if mode.checksTag && client.recordChangeTag != existing.recordChangeTag {
            let message = client.recordChangeTag == nil
                ? "a record named \(client.recordID.recordName) already exists; fetch it and save your changes onto it"
                : "the record changed on the server (tag \(existing.recordChangeTag ?? "none"), yours \(client.recordChangeTag ?? "none")); merge into the server's copy and retry"
            throw CumulusError(.serverRecordChanged, message, recordID: client.recordID, serverRecord: existing)
        }
        guard client.recordType == existing.recordType else {
            throw CumulusError(
                .invalidArguments,
                "record \(client.recordID.recordName) is a \(existing.recordType); its type cannot become \(client.recordType)",
                recordID: client.recordID)
        }
        if mode == .replace || mode == .forceReplace {
            var replaced = existing
            replaced.setStoredValues(from: client)
            replaced.parent = client.parent
            replaced.clearChangedKeys()
            return replaced
        }
        var fields = existing.fields
        var encrypted = existing.encryptedValues
        var parent = existing.parent
        switch mode {
        case .replace, .forceReplace:
            break  // handled above
        case .allKeys, .update, .forceUpdate:
            for (key, value) in client.fields {
                fields[key] = value
                encrypted[key] = nil
            }
            for (key, value) in client.encryptedValues {
                encrypted[key] = value
                fields[key] = nil
            }
            for key in client.changedKeys where client.fields[key] == nil && client.encryptedValues[key] == nil {
                fields[key] = nil
                encrypted[key] = nil
            }
            if client.parent != nil || client.changedKeys.contains("parent") { parent = client.parent }
        case .ifServerRecordUnchanged, .changedKeys:
            for key in client.changedKeys where key != "parent" {
                fields[key] = client.fields[key]
                encrypted[key] = client.encryptedValues[key]
            }
            if client.changedKeys.contains("parent") { parent = client.parent }
        case .create:
            break  // handled above
        }
        var merged = existing
        merged.setStored(fields: fields, encryptedValues: encrypted)
        merged.parent = parent
        merged.clearChangedKeys()
        return merged
    }

    /// The keys whose values differ between `old` and `new` (user and encrypted),
    /// sorted: what the log records as the save's changed keys.
    static func changedKeys(from old: Record?, to new: Record) -> [String] {
        // One pass over each side, no union sets, each dictionary read once: building
        // sets of both sides' keys and sorting through `UTF8View` was most of this in
        // the profile of a 400-record operation, where every record is new.
        var keys: [String] = []
        func differences(_ before: [String: FieldValue], _ after: [String: FieldValue]) {
            if before.isEmpty {
                keys.append(contentsOf: after.keys)
                return
            }
            for (key, value) in after where before[key] != value { keys.append(key) }
            for key in before.keys where after[key] == nil { keys.append(key) }
        }
        differences(old?.fields ?? [:], new.fields)
        differences(old?.encryptedValues ?? [:], new.encryptedValues)
        // A key can differ in both spaces; it is listed once. Valid keys are ASCII,
        // where byte equality is Swift's; any other key is deduplicated Swift's way.
        guard keys.allSatisfy(UTF8Order.isASCII) else { return Set(keys).sorted(by: UTF8Order.precedes) }
        return UTF8Order.sorted(keys) { UTF8Order.compare($0, $1) }
    }
}
