/// A field's type in the schema language: a primitive, possibly `ENCRYPTED`, possibly
/// a `LIST<…>` of one.
public struct SchemaFieldType: Sendable, Hashable {
    /// The primitive types.
    public enum Primitive: String, Sendable, Hashable, CaseIterable {
        case asset = "ASSET"
        case bytes = "BYTES"
        case double = "DOUBLE"
        case int64 = "INT64"
        case location = "LOCATION"
        /// `NUMBER`: a field added just in time whose integer/double kind is open.
        case number = "NUMBER"
        case reference = "REFERENCE"
        case string = "STRING"
        case timestamp = "TIMESTAMP"
    }

    /// The primitive.
    public var primitive: Primitive
    /// `ENCRYPTED …`: stored in the record's encrypted key space, never indexed.
    /// Allowed for BYTES, STRING, DOUBLE, INT64, LOCATION and TIMESTAMP.
    public var isEncrypted: Bool
    /// `NUMBER PREFERRED AS INT64|DOUBLE`: only with `.number`, and only those two.
    public var preferred: Primitive?
    /// `LIST<…>`.
    public var isList: Bool

    /// A type.
    public init(_ primitive: Primitive, encrypted: Bool = false, preferred: Primitive? = nil, list: Bool = false) {
        self.primitive = primitive
        isEncrypted = encrypted
        self.preferred = preferred
        isList = list
    }

    /// The primitives `ENCRYPTED` may take.
    public static let encryptable: Set<Primitive> = [.bytes, .string, .double, .int64, .location, .timestamp]

    /// The type as the schema language writes it, e.g. `LIST<ENCRYPTED STRING>`.
    public var schemaText: String {
        var text = isEncrypted ? "ENCRYPTED " + primitive.rawValue : primitive.rawValue
        if let preferred { text += " PREFERRED AS " + preferred.rawValue }
        return isList ? "LIST<\(text)>" : text
    }
}
