extension Asset {
    /// The asset dictionary `{"fileChecksum", "size", …}`; optional members appear only when set.
    public var wireJSON: JSONValue {
        var members: [String: JSONValue] = ["fileChecksum": .string(fileChecksum), "size": .int(size)]
        if let referenceChecksum { members["referenceChecksum"] = .string(referenceChecksum) }
        if let wrappingKey { members["wrappingKey"] = .string(wrappingKey) }
        if let receipt { members["receipt"] = .string(receipt) }
        return .object(members)
    }

    /// Reads an asset dictionary: `fileChecksum` (string) and `size` (integer) are
    /// required; `downloadURL` and other response-only members are ignored.
    public init(wire json: JSONValue, field: String) throws {
        guard case .object(let members) = json else {
            throw CumulusError.wire(field, "an asset must be an object, got \(json.kindName)")
        }
        guard let fileChecksum = members["fileChecksum"]?.stringValue else {
            throw CumulusError.wire(field, "an asset needs a string fileChecksum")
        }
        guard let size = members["size"]?.int64Value else {
            throw CumulusError.wire(field, "an asset needs an integer size")
        }
        func text(_ name: String) throws -> String? {
            guard let member = members[name], member != .null else { return nil }
            guard let value = member.stringValue else {
                throw CumulusError.wire(field, "an asset's \(name) must be a string, got \(member.kindName)")
            }
            return value
        }
        self.init(
            fileChecksum: fileChecksum, size: size, referenceChecksum: try text("referenceChecksum"),
            wrappingKey: try text("wrappingKey"), receipt: try text("receipt"))
    }
}
