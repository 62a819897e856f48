/// What a request handler asks of a JSON value: met by a built ``JSONValue`` and by a
/// ``JSONDocument/Node`` read in place from a body's bytes, so that one handler reads
/// either, and builds values only of the parts a wire decoder takes as ``JSONValue``.
public protocol JSONReadable: Sendable {
    /// The member `key` of an object; `nil` for a missing key or a non-object.
    subscript(key: String) -> Self? { get }
    /// The text, if this is a string.
    var stringValue: String? { get }
    /// The truth value, if this is a boolean.
    var boolValue: Bool? { get }
    /// The number as an `Int64`, if it is one exactly (an integral double in range counts).
    var int64Value: Int64? { get }
    /// The elements, if this is an array (for a node, counted against its document's
    /// memory limit).
    var arrayValue: [Self]? { get throws }
    /// Whether this is `null`.
    var isNull: Bool { get }
    /// Whether this is an object.
    var isObject: Bool { get }
    /// The value built (for a node, within its document's memory limit).
    func json() throws -> JSONValue
}

extension JSONValue: JSONReadable {
    /// Whether this is `null`.
    public var isNull: Bool { self == .null }
    /// Whether this is an object.
    public var isObject: Bool { objectValue != nil }
    /// The value itself.
    public func json() -> JSONValue { self }
}

extension JSONDocument.Node: JSONReadable {}
