import CumulusEngine
@testable import CumulusModel
@testable import CumulusServer
import Foundation

/// The record JSON the server built before it wrote answers from stored bytes: a
/// `JSONValue` tree per record, serialized by `JSONEncoder` with sorted keys. Kept
/// here, word for word, as the reference ``RecordJSONWriter`` is held to
/// (`RecordJSONWriterTests`); the server itself no longer builds it.
enum ReferenceRecordJSON {
    static let encryptedPrefix = "ENCRYPTED_"

    /// The record dictionary of a response. `desiredKeys` limits the fields (nil: all);
    /// `downloadURL` gives each asset its `downloadURL` (reads; not a modify's echo).
    /// Throws `internalError` when the record's stored values turn out damaged (reads
    /// check values as they decode them; this is where a whole record is written out).
    static func encode(
        _ record: Record, desiredKeys: Set<String>? = nil, numbersAsStrings: Bool = false,
        downloadURL: ((Asset) -> String?)? = nil
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

}
