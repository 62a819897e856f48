import Foundation

/// A JSON document as CloudKit Web Services exchanges it.
///
/// Integers are kept apart from doubles so INT64 field values and millisecond
/// timestamps survive exactly (a `Double` loses integers above 2^53). Decoding
/// yields `.int` for any number that fits an `Int64` exactly, `.double` otherwise.
public enum JSONValue: Sendable, Hashable {
    /// `null`
    case null
    /// `true` / `false`
    case bool(Bool)
    /// A number that is an integer within the `Int64` range.
    case int(Int64)
    /// Any other (finite) number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; key order is not kept.
    case object([String: JSONValue])

    /// The member `key` of an object; `nil` for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The text, if this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The truth value, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The number as an `Int64`, if it is one exactly (an integral double in range counts).
    public var int64Value: Int64? {
        switch self {
        case .int(let n): return n
        case .double(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The number as a `Double` (integers converted), if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let n): return Double(n)
        case .double(let d): return d
        default: return nil
        }
    }

    /// What kind of JSON value this is, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Parses a JSON document (``JSONDocument``) and builds its value; malformed input is
    /// `invalidArguments`, and a document whose values would take more than
    /// `memoryLimit` bytes in memory is `limitExceeded`.
    public static func parse(_ data: Data, memoryLimit: Int = .max) throws -> JSONValue {
        try JSONDocument(parsing: Array(data), memoryLimit: memoryLimit).root.json()
    }

    /// What parsing a request body of `count` bytes may take in memory, its
    /// ``JSONDocument``'s tape (at most 6 times its size) and the values built from it
    /// together: 24 times its size, and 64 KiB at least. CloudKit's bodies estimate at
    /// 8–16 times as values (a `records/modify` operation about 8, a list of one-digit
    /// numbers 16) and 3–6 as a tape; bodies built to amplify, such as `[[1],[1],…]`,
    /// at 32 as values, and are refused part-way. The server reserves this from its
    /// body budget before it parses.
    public static func memoryLimit(forBodyBytes count: Int) -> Int {
        count == 0 ? 0 : max(64 << 10, 24 * count)
    }

    /// The document as UTF-8 JSON, keys sorted so equal values give equal bytes.
    public func serialized(prettyPrinted: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

extension JSONValue: Codable {
    /// Decodes any JSON value, preferring the most exact number representation.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let n = try? container.decode(Int64.self) {
            self = .int(n)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let elements = try? container.decode([JSONValue].self) {
            self = .array(elements)
        } else if let members = try? container.decode([String: JSONValue].self) {
            self = .object(members)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Encodes the value; a non-finite double fails as `JSONEncoder` decides.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .int(let n): try container.encode(n)
        case .double(let d): try container.encode(d)
        case .string(let text): try container.encode(text)
        case .array(let elements): try container.encode(elements)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`
    public init(nilLiteral: ()) { self = .null }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A double.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
