import CumulusEngine
import CumulusModel
import Foundation

/// A record as CloudKit Web Services writes and reads it (CLOUDKIT.md §1.8).
///
/// Values of the record's encrypted key space (SPEC §1) travel among the `fields`, with
/// their type prefixed `ENCRYPTED_`: `ENCRYPTED_BYTES` (base64) is what CloudKit's own
/// tools send, the client's ciphertext; the server stores and returns it untouched.
enum RecordJSON {
    /// The wire type prefix of a value in the encrypted key space.
    static let encryptedPrefix = "ENCRYPTED_"

    /// The record dictionary of a response. `desiredKeys` limits the fields (nil: all);
    /// `downloadURL` gives each asset its `downloadURL` (reads; not a modify's echo).
    /// Throws `internalError` when the record's stored values turn out damaged (reads
    /// check values as they decode them; this is where a whole record is written out).
    /// A share record comes with `share`, its access, as `caller` may see it.
    static func encode(
        _ record: Record, desiredKeys: Set<String>? = nil, numbersAsStrings: Bool = false,
        downloadURL: ((Asset) -> String?)? = nil, share: Share? = nil, caller: String? = nil
    ) throws(CumulusError) -> JSONValue {
        if let damage = record.storedValuesError() { throw damage }
        var fields: [String: JSONValue] = [:]
        for (space, prefix) in [(record.fields, ""), (record.encryptedValues, encryptedPrefix)] {
            for (key, value) in space where desiredKeys?.contains(key) ?? true {
                var wireValue = value.wireValue
                if numbersAsStrings {
                    switch wireValue {
                    case .int(let int): wireValue = .string(String(int))
                    case .double(let double): wireValue = .string(String(double))
                    default: break
                    }
                }
                if let downloadURL, let linked = Self.linking(value, downloadURL) { wireValue = linked }
                fields[key] = ["value": wireValue, "type": .string(prefix + value.wireTypeName)]
            }
        }
        var dict: [String: JSONValue] = [
            "recordName": .string(record.recordID.recordName),
            "recordType": .string(record.recordType),
            "fields": .object(fields),
            "zoneID": record.recordID.zoneID.wireJSON,
            "deleted": .bool(false),
        ]
        if let tag = record.recordChangeTag { dict["recordChangeTag"] = .string(tag) }
        if let date = record.creationDate {
            dict["created"] = stamp(date, record.creatorUserRecordID)
        }
        if let date = record.modificationDate {
            dict["modified"] = stamp(date, record.lastModifiedUserRecordID)
        }
        if let parent = record.parent { dict["parent"] = ["recordName": .string(parent.recordID.recordName)] }
        if let share = record.share {
            dict["share"] = ["recordName": .string(share.recordID.recordName), "zoneID": share.recordID.zoneID.wireJSON]
        }
        if let share { ShareJSON.describe(share, in: &dict, caller: caller) }
        return .object(dict)
    }

    /// An asset value (or list of them) with each asset's `downloadURL`; `nil` for
    /// any other value.
    static func linking(_ value: FieldValue, _ downloadURL: (Asset) -> String?) -> JSONValue? {
        func linked(_ asset: Asset) -> JSONValue {
            guard case .object(var members) = asset.wireJSON, let url = downloadURL(asset) else { return asset.wireJSON }
            members["downloadURL"] = .string(url)
            return .object(members)
        }
        switch value {
        case .asset(let asset): return linked(asset)
        case .list(let items) where items.first?.scalarType == .asset:
            return .array(items.map { item in
                if case .asset(let asset) = item { return linked(asset) }
                return item.wireValue
            })
        default: return nil
        }
    }

    static func stamp(_ date: Timestamp, _ user: RecordID?) -> JSONValue {
        [
            "timestamp": .int(date.millisecondsSince1970),
            "userRecordName": .string(user?.recordName ?? ""),
            "deviceID": "Cumulus",
        ]
    }

    /// A deletion as a change feed reports it.
    static func deletion(_ deletion: RecordDeletion) -> JSONValue {
        [
            "recordName": .string(deletion.recordID.recordName),
            "recordType": .string(deletion.recordType),
            "zoneID": deletion.recordID.zoneID.wireJSON,
            "deleted": true,
        ]
    }

    /// The client's record from a request: name (a UUID when absent), type, change
    /// tag, fields (a null value removes the field), parent. Every field it sends is
    /// marked changed; server-set fields are ignored.
    static func decode(_ json: JSONValue, zone: ZoneID, requireType: Bool) throws -> Record {
        guard case .object(let dict) = json else {
            throw CumulusError(.invalidArguments, "'record' must be an object")
        }
        let name = try dict["recordName"].map { value -> String in
            guard let name = value.stringValue else { throw CumulusError(.invalidArguments, "'recordName' must be a string") }
            return name
        } ?? UUID().uuidString
        let type: String
        if let value = dict["recordType"] {
            guard let string = value.stringValue else { throw CumulusError(.invalidArguments, "'recordType' must be a string") }
            type = string == "cloudKit.share" ? "cloudkit.share" : string
        } else if requireType {
            throw CumulusError(.invalidArguments, "record \(name) needs a 'recordType'")
        } else {
            type = ""
        }
        var record = Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone))
        if let tag = dict["recordChangeTag"] {
            guard let string = tag.stringValue else { throw CumulusError(.invalidArguments, "'recordChangeTag' must be a string") }
            record.recordChangeTag = string
        }
        if let fields = dict["fields"], fields != .null {
            guard case .object(let entries) = fields else {
                throw CumulusError(.invalidArguments, "'fields' must be an object of field dictionaries")
            }
            for (key, field) in entries {
                if let type = field["type"]?.stringValue?.uppercased(), type.hasPrefix(encryptedPrefix) {
                    // The encrypted key space: the same value forms under the plain type.
                    if let value = field["value"], value != .null {
                        record[encrypted: key] = try FieldValue(
                            wireValue: value, type: String(type.dropFirst(encryptedPrefix.count)), field: key,
                            defaultZone: zone)
                    } else {
                        record[encrypted: key] = nil
                    }
                } else if case .object(let inner) = field, inner["value"] == nil || inner["value"] == .null {
                    record[key] = nil
                } else if field == .null {
                    record[key] = nil
                } else {
                    record[key] = try FieldValue(wireField: field, field: key, defaultZone: zone)
                }
            }
        }
        if let parent = dict["parent"], parent != .null {
            guard let parentName = parent["recordName"]?.stringValue else {
                throw CumulusError(.invalidArguments, "'parent' needs a 'recordName'")
            }
            record.parent = Reference(recordID: RecordID(recordName: parentName, zoneID: zone))
        } else if dict["parent"] == .null {
            record.parent = nil
        }
        return record
    }
}
