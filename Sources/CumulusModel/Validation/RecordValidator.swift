/// Checks a record against every rule that needs no stored state
/// (`Docs/DATA-MODEL.md`, "Records" and "References"), so a request can be refused
/// before it touches storage. Rules that need the
/// database (a parent that must exist, the 750-owner limit, `validate` targets)
/// belong to the engine's planner.
public enum RecordValidator {
    /// Throws the first rule `record` breaks in a database of `scope`, as a
    /// `CumulusError` naming the record and, where it applies, the field.
    public static func validate(_ record: Record, in scope: DatabaseScope) throws {
        try checkRules(record, in: scope)
        try checkSize(of: record.recordID) { try RecordCodec.encode(record) }
    }

    /// ``validate(_:in:)`` for the record about to be stored, keeping the bytes its
    /// size was measured by (``RecordCodec/encodeKeepingValues(_:)``): the log's frame
    /// and the view then copy them instead of encoding every value again.
    ///
    /// With `rulesHeld` the caller knows ``checkRules(_:in:)`` passed for a record of
    /// the same identity, type, values and parent (the engine checks a save's record
    /// on the caller's task, before the writer adds system fields that no rule
    /// reads): only the size, which the system fields add to, is measured.
    public static func validateForStorage(_ record: inout Record, in scope: DatabaseScope, rulesHeld: Bool = false) throws {
        if !rulesHeld { try checkRules(record, in: scope) }
        try checkSize(of: record.recordID) { try RecordCodec.encodeKeepingValues(&record) }
    }

    /// Every rule but the size: what a request's records are checked against before
    /// any work is done. The size is measured on the record as it will be stored
    /// (``validateForStorage(_:in:)``), once the server has set its system fields.
    public static func checkRules(_ record: Record, in scope: DatabaseScope) throws {
        let id = record.recordID
        do {
            try NameRules.checkRecordID(
                id, allowSystem: record.recordType == "Users" || NameRules.systemRecordNames.contains(id.recordName))
            try NameRules.checkRecordType(record.recordType)
            if scope == .public && !id.zoneID.isDefaultZone {
                throw CumulusError(.invalidArguments, "the public database has only the default zone")
            }
            try checkFields(record.fields, of: record)
            if !record.encryptedValues.isEmpty && scope == .public {
                throw CumulusError(
                    .invalidArguments, "encrypted values are not allowed in the public database",
                    field: record.encryptedValues.keys.min())
            }
            for key in record.encryptedValues.keys.sorted() {
                guard let value = record.encryptedValues[key] else { continue }
                if record.fields[key] != nil {
                    throw CumulusError(
                        .invalidArguments, "'\(key)' is both a plain and an encrypted field; use one", field: key)
                }
                try checkField(key, value, of: record, encrypted: true)
            }
            if let parent = record.parent {
                guard parent.action == .none else {
                    throw CumulusError(
                        .invalidArguments, "a parent reference must use action none, not \(parent.action)",
                        field: "parent")
                }
                try checkSameZone(parent, of: record, field: "parent")
            }
            if let share = record.share { try checkSameZone(share, of: record, field: "share") }
        } catch let error as CumulusError {
            throw error.at(id)
        }
    }

    /// Checks every plain field. Fields are checked in the dictionary's
    /// order, and in name order only once one has failed, so that the error reported
    /// is always the first by name: sorting every save's keys up front was most of
    /// this check's cost (it runs once as a request arrives and once more on the
    /// record as stored).
    private static func checkFields(_ fields: [String: FieldValue], of record: Record) throws {
        do {
            for (key, value) in fields { try checkField(key, value, of: record, encrypted: false) }
        } catch {
            for key in fields.keys.sorted() {
                guard let value = fields[key] else { continue }
                try checkField(key, value, of: record, encrypted: false)
            }
            throw error
        }
    }

    /// Encodes the record (which refuses values with no canonical form) and checks
    /// the size of what it wrote.
    private static func checkSize(of id: RecordID, _ encode: () throws -> [UInt8]) throws {
        do {
            let size = try encode().count
            guard size <= Limits.maxRecordSize else {
                throw CumulusError(
                    .limitExceeded,
                    "record encodes to \(size) bytes; the limit is \(Limits.maxRecordSize). Move large data into an asset")
            }
        } catch let error as CumulusError {
            throw error.at(id)
        }
    }

    /// One field's name and value.
    public static func checkField(_ key: String, _ value: FieldValue, of record: Record, encrypted: Bool) throws {
        do {
            // A share's system fields (`cloudkit.title`…) are CloudKit's names, dots and all.
            if !(Share.isShareType(record.recordType) && Share.systemFieldKeys.contains(key)) {
                try NameRules.checkFieldName(key)
            }
            try checkValue(value, of: record, field: key, encrypted: encrypted)
        } catch let error as CumulusError {
            throw error.at(record.recordID, field: key)
        }
    }

    static func checkValue(_ value: FieldValue, of record: Record, field: String, encrypted: Bool) throws {
        if case .list(let items) = value {
            guard let elementType = items.first?.scalarType else {
                if items.isEmpty { return }
                throw CumulusError(.invalidArguments, "lists cannot contain lists", field: field)
            }
            for item in items {
                guard let type = item.scalarType else {
                    throw CumulusError(.invalidArguments, "lists cannot contain lists", field: field)
                }
                guard type == elementType else {
                    throw CumulusError(
                        .invalidArguments,
                        "a list must hold one type; found \(type.wireName) in a \(elementType.wireName) list",
                        field: field)
                }
                try checkScalar(item, of: record, field: field, encrypted: encrypted)
            }
            return
        }
        try checkScalar(value, of: record, field: field, encrypted: encrypted)
    }

    static func checkScalar(_ value: FieldValue, of record: Record, field: String, encrypted: Bool) throws {
        switch value {
        case .double(let number):
            guard number.isFinite else {
                throw CumulusError(.invalidArguments, "doubles must be finite; got \(number)", field: field)
            }
        case .location(let location):
            for part in location.doubleComponents where !part.value.isFinite {
                throw CumulusError(
                    .invalidArguments, "location \(part.name) must be finite; got \(part.value)", field: field)
            }
            guard (-90...90).contains(location.latitude), (-180...180).contains(location.longitude) else {
                throw CumulusError(
                    .invalidArguments,
                    "latitude must lie in −90…90 and longitude in −180…180; got \(location.latitude), \(location.longitude)",
                    field: field)
            }
        case .reference(let reference):
            if encrypted {
                throw CumulusError(.invalidArguments, "references cannot be encrypted", field: field)
            }
            try NameRules.checkRecordID(reference.recordID, allowSystem: true)
            try checkSameZone(reference, of: record, field: field)
        case .asset:
            if encrypted {
                throw CumulusError(.invalidArguments, "assets cannot be encrypted", field: field)
            }
        case .string, .int64, .timestamp, .bytes, .list:
            break
        }
    }

    static func checkSameZone(_ reference: Reference, of record: Record, field: String) throws {
        guard reference.recordID.zoneID == record.recordID.zoneID else {
            throw CumulusError(
                .invalidArguments,
                "reference to \(reference.recordID) crosses zones; a reference must stay in zone \(record.recordID.zoneID)",
                field: field)
        }
    }
}
