import CumulusEngine
import CumulusModel
import Foundation

/// A record as CloudKit Web Services writes and reads it (`Docs/HTTP-API.md`, "Records on the wire").
///
/// Values of the record's encrypted key space travel among the `fields`, with their type
/// prefixed `ENCRYPTED_` (`Docs/HTTP-API.md`, "Encrypted values"): `ENCRYPTED_BYTES` (base64) is what CloudKit's own
/// tools send, the client's ciphertext; the server stores and returns it untouched.
enum RecordJSON {
    /// The wire type prefix of a value in the encrypted key space.
    static let encryptedPrefix = RecordJSONWriter.encryptedPrefix

    /// The record dictionary of a response, as a tree: for the answers still built as
    /// trees (a share's root record, a conflict's server record, a notification). It is
    /// what ``RecordJSONWriter`` writes, parsed back, so the record's wire form is
    /// defined in that one place (a whole double, 1e17, parses back as the integer it
    /// equals: the same JSON number). `desiredKeys` limits the fields (nil: all);
    /// `downloadURL` gives each asset its `downloadURL`. Throws `internalError` when
    /// the record's stored values turn out damaged. A share record comes with `share`,
    /// its access, as `caller` may see it.
    static func encode(
        _ record: Record, desiredKeys: Set<String>? = nil, numbersAsStrings: Bool = false,
        downloadURL: (@Sendable (Asset) -> String?)? = nil, share: Share? = nil, caller: String? = nil
    ) throws(CumulusError) -> JSONValue {
        var writer = JSONWriter(capacity: 1024)
        try RecordJSONWriter.write(
            record, RecordJSONWriter.Options(desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings, downloadURL: downloadURL),
            into: &writer)
        let written: JSONValue
        do {
            written = try JSONValue.parse(Data(writer.bytes))
        } catch {
            throw CumulusError(.internalError, "record \(record.recordID.recordName) was written as invalid JSON: \(error)")
        }
        guard let share, case .object(var dict) = written else { return written }
        ShareJSON.describe(share, in: &dict, caller: caller)
        return .object(dict)
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
        } ?? UUID.random().uuidString
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
