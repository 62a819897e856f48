/// A record field's value: one of CloudKit's types, or a homogeneous list of one
/// (`Docs/DATA-MODEL.md`, "Field values").
///
/// A list is modelled as `.list([FieldValue])` so values can be built from untyped
/// input (JSON, tests) and checked afterwards; ``RecordValidator`` refuses nested
/// and mixed lists before anything is stored.
public enum FieldValue: Sendable, Hashable {
    /// UTF-8 text.
    case string(String)
    /// A 64-bit signed integer (CloudKit's INT64; booleans are stored as 0/1).
    case int64(Int64)
    /// A finite IEEE-754 double.
    case double(Double)
    /// A date at millisecond precision.
    case timestamp(Timestamp)
    /// Opaque bytes.
    case bytes([UInt8])
    /// A reference to a record in the same zone.
    case reference(Reference)
    /// A geographic location.
    case location(Location)
    /// A stored file.
    case asset(Asset)
    /// A homogeneous list of scalar values; may be empty.
    case list([FieldValue])

    /// The type of a value, as CloudKit Web Services names it.
    public enum ValueType: UInt8, Sendable, Hashable, CaseIterable {
        /// `STRING`
        case string = 1
        /// `INT64`
        case int64 = 2
        /// `DOUBLE`
        case double = 3
        /// `TIMESTAMP`
        case timestamp = 4
        /// `BYTES`
        case bytes = 5
        /// `REFERENCE`
        case reference = 6
        /// `LOCATION`
        case location = 7
        /// `ASSETID`
        case asset = 8

        /// The wire name, e.g. `INT64`.
        public var wireName: String {
            switch self {
            case .string: "STRING"
            case .int64: "INT64"
            case .double: "DOUBLE"
            case .timestamp: "TIMESTAMP"
            case .bytes: "BYTES"
            case .reference: "REFERENCE"
            case .location: "LOCATION"
            case .asset: "ASSETID"
            }
        }
    }

    /// The scalar type of this value; `nil` for a list.
    public var scalarType: ValueType? {
        switch self {
        case .string: .string
        case .int64: .int64
        case .double: .double
        case .timestamp: .timestamp
        case .bytes: .bytes
        case .reference: .reference
        case .location: .location
        case .asset: .asset
        case .list: nil
        }
    }

    /// The scalar type of this value, or of a list's first element (`nil` for an
    /// empty list): the type a stored value is tagged with, found without building
    /// ``scalars`` (every saved record's fields are asked this).
    public var elementType: ValueType? {
        if case .list(let items) = self { return items.first?.scalarType }
        return scalarType
    }

    /// The value itself, or each element of a list: what a reference or token
    /// scan looks at.
    public var scalars: [FieldValue] {
        if case .list(let items) = self { return items }
        return [self]
    }

    /// Calls `body` with each of ``scalars`` without building an array for a scalar:
    /// the index keys and tokens of every saved or deleted record walk each field
    /// this way, and a one-element array per field was an allocation and a free each.
    @inlinable public func forEachScalar(_ body: (FieldValue) throws -> Void) rethrows {
        if case .list(let items) = self {
            for item in items { try body(item) }
        } else {
            try body(self)
        }
    }

    /// Calls `body` with the UTF-8 bytes of the value's string, or of each string in
    /// its list (other values: not at all); the bytes are valid only during `body`.
    public func forEachStringUTF8(_ body: (UnsafeRawBufferPointer) -> Void) {
        forEachScalar { scalar in
            guard case .string(var text) = scalar else { return }
            text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
    }

    /// Whether the value is a string or a list of strings (text search reads it).
    public var isText: Bool {
        if case .list(let items) = self { return items.first?.scalarType == .string }
        return scalarType == .string
    }

    /// Every reference this value holds, list elements included.
    public var references: [Reference] {
        var found: [Reference] = []
        forEachReference { found.append($0) }
        return found
    }

    /// Calls `body` with each reference this value holds (itself, or its list's
    /// elements), in order: ``references`` without building arrays, for the walks
    /// every saved record's fields get (the reference graph, the planner's checks).
    @inlinable public func forEachReference(_ body: (Reference) throws -> Void) rethrows {
        switch self {
        case .reference(let reference):
            try body(reference)
        case .list(let items):
            for case .reference(let reference) in items { try body(reference) }
        default:
            break
        }
    }

    /// Calls `body` with each asset this value holds (itself, or its list's elements).
    @inlinable public func forEachAsset(_ body: (Asset) throws -> Void) rethrows {
        switch self {
        case .asset(let asset):
            try body(asset)
        case .list(let items):
            for case .asset(let asset) in items { try body(asset) }
        default:
            break
        }
    }
}
