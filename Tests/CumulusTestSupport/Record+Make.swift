import CumulusModel

extension Record {
    /// A record of `type` named `name` in `zone`, with `fields`.
    public static func make(_ type: String, _ name: String, in zone: ZoneID, _ fields: [String: FieldValue] = [:]) -> Record {
        Record(recordType: type, recordID: RecordID(recordName: name, zoneID: zone), fields: fields)
    }
}

/// A reference field to the record `name` in `zone`, with `action`.
public func ref(_ name: String, in zone: ZoneID, _ action: Reference.Action = .none) -> FieldValue {
    .reference(Reference(recordID: RecordID(recordName: name, zoneID: zone), action: action))
}
