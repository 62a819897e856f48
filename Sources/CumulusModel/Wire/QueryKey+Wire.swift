extension QueryKey {
    /// The `___` name CloudKit Web Services gives a system key in `systemFieldName`
    /// (`Docs/HTTP-API.md`, "Queries on the wire"); `nil` for user fields and the
    /// token pseudo-key.
    public var systemFieldName: String? {
        switch self {
        case .recordName: "___recordId"
        case .creationDate: "___createTime"
        case .modificationDate: "___modTime"
        case .creatorUserRecordID: "___createdBy"
        case .lastModifiedUserRecordID: "___modifiedBy"
        case .parent: "___parent"
        case .share: "___share"
        case .field, .allTokens: nil
        }
    }

    /// The members naming this key in a filter or sort dictionary: `systemFieldName`
    /// for system keys, `fieldName` otherwise (the token key as `allTokens`).
    public var wireMembers: [String: JSONValue] {
        if let systemFieldName { return ["systemFieldName": .string(systemFieldName)] }
        return ["fieldName": .string(description)]
    }

    /// Reads the key of a filter or sort dictionary from `fieldName` or
    /// `systemFieldName` (the `___` names and their long forms such as
    /// `createdTimestamp` both work); `what` names the dictionary in errors.
    public init(wireMembers members: [String: JSONValue], what: String) throws {
        let fieldName = members["fieldName"].flatMap { $0 == .null ? nil : $0 }
        let systemName = members["systemFieldName"].flatMap { $0 == .null ? nil : $0 }
        switch (fieldName, systemName) {
        case (let name?, nil):
            guard case .string(let text) = name, !text.isEmpty else {
                throw CumulusError(.invalidArguments, "\(what): fieldName must be a non-empty string")
            }
            self.init(name: text)
        case (nil, let name?):
            guard case .string(let text) = name else {
                throw CumulusError(.invalidArguments, "\(what): systemFieldName must be a string")
            }
            let key = QueryKey(name: text)
            if case .field = key {
                throw CumulusError(.invalidArguments, "\(what): unknown systemFieldName '\(text)'", field: text)
            }
            self = key
        case (.some, .some):
            throw CumulusError(.invalidArguments, "\(what): give fieldName or systemFieldName, not both")
        case (nil, nil):
            throw CumulusError(.invalidArguments, "\(what): fieldName (or systemFieldName) is required")
        }
    }
}
