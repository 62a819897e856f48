import Foundation

extension FieldValue.ValueType {
    /// The type a wire name spells; `ASSET` (the schema's spelling) is accepted for `ASSETID`.
    public init?(wireName: String) {
        switch wireName {
        case "STRING": self = .string
        case "INT64": self = .int64
        case "DOUBLE": self = .double
        case "TIMESTAMP": self = .timestamp
        case "BYTES": self = .bytes
        case "REFERENCE": self = .reference
        case "LOCATION": self = .location
        case "ASSETID", "ASSET": self = .asset
        default: return nil
        }
    }

    /// The wire name of a list of this type, e.g. `INT64_LIST`; assets are `ASSET_LIST`
    /// (`Docs/HTTP-API.md`, "Records on the wire"; `ASSETID_LIST` is accepted on input).
    public var listWireName: String {
        self == .asset ? "ASSET_LIST" : wireName + "_LIST"
    }
}

extension FieldValue {
    /// The CloudKit Web Services type string, e.g. `STRING` or `REFERENCE_LIST`.
    /// An empty list has no element type in the model and is written `STRING_LIST`;
    /// readers match an empty list whatever its declared type.
    public var wireTypeName: String {
        switch self {
        case .list(let items): (items.first?.scalarType ?? .string).listWireName
        case .string: ValueType.string.wireName
        case .int64: ValueType.int64.wireName
        case .double: ValueType.double.wireName
        case .timestamp: ValueType.timestamp.wireName
        case .bytes: ValueType.bytes.wireName
        case .reference: ValueType.reference.wireName
        case .location: ValueType.location.wireName
        case .asset: ValueType.asset.wireName
        }
    }

    /// The bare JSON value (the `value` member of a field dictionary): bytes as
    /// base64, timestamps as integer milliseconds, doubles as JSON numbers.
    public var wireValue: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .int64(let n): .int(n)
        case .double(let d): .double(d)
        case .timestamp(let t): .int(t.millisecondsSince1970)
        case .bytes(let bytes): .string(Data(bytes).base64EncodedString())
        case .reference(let reference): reference.wireJSON
        case .location(let location): location.wireJSON
        case .asset(let asset): asset.wireJSON
        case .list(let items): .array(items.map(\.wireValue))
        }
    }

    /// The CloudKit "Record Field" dictionary `{"value": …, "type": …}`; the type is always written.
    public var wireField: JSONValue {
        ["value": wireValue, "type": .string(wireTypeName)]
    }

    /// Reads a "Record Field" dictionary `{"value": …, "type": …}` for `field`.
    ///
    /// Lenient as CloudKit clients need (`Docs/HTTP-API.md`, "What clients send"):
    /// without `type`, the type is
    /// inferred from the value's JSON shape; integers are accepted for `DOUBLE` and
    /// `TIMESTAMP`, booleans for `INT64`, numeric strings for `INT64`/`DOUBLE`/`TIMESTAMP`
    /// (`numbersAsStrings`); references may omit `zoneID` (they then point into
    /// `defaultZone`) and `action` (`.none`). Anything else is `invalidArguments`
    /// naming `field`.
    public init(wireField json: JSONValue, field: String, defaultZone: ZoneID = .default) throws {
        guard case .object(let members) = json else {
            throw CumulusError.wire(field, "a field value must be an object {\"value\": …, \"type\": …}, got \(json.kindName)")
        }
        guard let value = members["value"], value != .null else {
            throw CumulusError.wire(field, "the field value has no value")
        }
        var type: String?
        switch members["type"] {
        case nil, .null?: break
        case .string(let name)?: type = name
        case let other?: throw CumulusError.wire(field, "type must be a string, got \(other.kindName)")
        }
        try self.init(wireValue: value, type: type, field: field, defaultZone: defaultZone)
    }

    /// Reads a bare JSON value of the wire type `type` (inferred when `nil`).
    public init(wireValue value: JSONValue, type: String?, field: String, defaultZone: ZoneID = .default) throws {
        guard let type else {
            self = try Self.inferred(value, field: field, defaultZone: defaultZone)
            return
        }
        let name = type.uppercased()
        if name.hasSuffix("_LIST") {
            guard let elementType = ValueType(wireName: String(name.dropLast(5))) else {
                throw CumulusError.wire(field, "unknown type '\(type)'")
            }
            guard case .array(let elements) = value else {
                throw CumulusError.wire(field, "a \(name) value must be an array, got \(value.kindName)")
            }
            self = .list(try elements.map { try Self.scalar($0, as: elementType, field: field, defaultZone: defaultZone) })
            return
        }
        guard let scalarType = ValueType(wireName: name) else {
            throw CumulusError.wire(field, "unknown type '\(type)'")
        }
        self = try Self.scalar(value, as: scalarType, field: field, defaultZone: defaultZone)
    }

    /// A timestamp from milliseconds that may have a fraction (floored, as
    /// `Timestamp(Date)` does).
    static func timestamp(fromMilliseconds ms: Double, field: String) throws -> Timestamp {
        guard ms.isFinite, ms >= -9.2e18, ms <= 9.2e18 else {
            throw CumulusError.wire(field, "the timestamp \(ms) is out of range")
        }
        return Timestamp(millisecondsSince1970: Int64(ms.rounded(.down)))
    }

    private static func scalar(_ value: JSONValue, as type: ValueType, field: String, defaultZone: ZoneID) throws -> FieldValue {
        func mismatch() -> CumulusError {
            CumulusError.wire(field, "a \(type.wireName) value cannot be \(value.kindName)")
        }
        switch type {
        case .string:
            guard case .string(let text) = value else { throw mismatch() }
            return .string(text)
        case .int64:
            switch value {
            case .int(let n): return .int64(n)
            case .double(let d):
                guard let n = Int64(exactly: d) else { throw CumulusError.wire(field, "the INT64 value \(d) is not an integer") }
                return .int64(n)
            case .bool(let flag): return .int64(flag ? 1 : 0)
            case .string(let text):
                guard let n = Int64(text) else { throw CumulusError.wire(field, "the INT64 value \"\(text)\" is not an integer") }
                return .int64(n)
            default: throw mismatch()
            }
        case .double:
            switch value {
            case .int(let n): return .double(Double(n))
            case .double(let d): return .double(d)
            case .string(let text):
                guard let d = Double(text), d.isFinite else {
                    throw CumulusError.wire(field, "the DOUBLE value \"\(text)\" is not a finite number")
                }
                return .double(d)
            default: throw mismatch()
            }
        case .timestamp:
            switch value {
            case .int(let n): return .timestamp(Timestamp(millisecondsSince1970: n))
            case .double(let d): return .timestamp(try timestamp(fromMilliseconds: d, field: field))
            case .string(let text):
                guard let n = Int64(text) else {
                    throw CumulusError.wire(field, "the TIMESTAMP value \"\(text)\" is not integer milliseconds")
                }
                return .timestamp(Timestamp(millisecondsSince1970: n))
            default: throw mismatch()
            }
        case .bytes:
            guard case .string(let text) = value else { throw mismatch() }
            guard let data = Data(base64Encoded: text) else {
                throw CumulusError.wire(field, "the BYTES value is not valid base64")
            }
            return .bytes([UInt8](data))
        case .reference:
            return .reference(try Reference(wire: value, field: field, defaultZone: defaultZone))
        case .location:
            return .location(try Location(wire: value, field: field))
        case .asset:
            return .asset(try Asset(wire: value, field: field))
        }
    }

    /// The value a client meant when it sent no `type` (`Docs/HTTP-API.md`, "What clients send").
    private static func inferred(_ value: JSONValue, field: String, defaultZone: ZoneID) throws -> FieldValue {
        switch value {
        case .string(let text):
            return .string(text)
        case .int(let n):
            return .int64(n)
        case .double(let d):
            return .double(d)
        case .bool(let flag):
            return .int64(flag ? 1 : 0)
        case .object(let members):
            if members["recordName"] != nil {
                return try scalar(value, as: .reference, field: field, defaultZone: defaultZone)
            }
            if members["latitude"] != nil, members["longitude"] != nil {
                return try scalar(value, as: .location, field: field, defaultZone: defaultZone)
            }
            if members["fileChecksum"] != nil {
                return try scalar(value, as: .asset, field: field, defaultZone: defaultZone)
            }
            throw CumulusError.wire(field, "cannot infer the type of this object; add \"type\"")
        case .array(let elements):
            var items: [FieldValue] = []
            items.reserveCapacity(elements.count)
            for element in elements {
                if case .array = element { throw CumulusError.wire(field, "lists cannot nest") }
                items.append(try inferred(element, field: field, defaultZone: defaultZone))
            }
            let types = Set(items.compactMap(\.scalarType))
            if types == [.int64, .double] {
                // `[1, 2.5]`: JSON does not tell integral doubles from integers.
                return .list(items.map { if case .int64(let n) = $0 { .double(Double(n)) } else { $0 } })
            }
            guard types.count <= 1 else {
                throw CumulusError.wire(field, "a list mixes \(types.map(\.wireName).sorted().joined(separator: ", ")); add \"type\"")
            }
            return .list(items)
        case .null:
            throw CumulusError.wire(field, "the field value has no value")
        }
    }
}
