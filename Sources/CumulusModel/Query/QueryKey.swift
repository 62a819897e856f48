/// What a filter or sort looks at: a user field, a system field, or the record's
/// full-text tokens (`Docs/DATA-MODEL.md`, "Queries").
public enum QueryKey: Sendable, Hashable, CustomStringConvertible {
    /// A user field by name.
    case field(String)
    /// The record's name (`recordID`, `recordName`; the wire's `___recordId`).
    case recordName
    /// `creationDate` (`___createTime`).
    case creationDate
    /// `modificationDate` (`___modTime`).
    case modificationDate
    /// `creatorUserRecordID` (`___createdBy`).
    case creatorUserRecordID
    /// `lastModifiedUserRecordID` (`___modifiedBy`).
    case lastModifiedUserRecordID
    /// `parent` (`___parent`).
    case parent
    /// `share` (`___share`).
    case share
    /// Every token of the record's string fields (`self`, `allTokens`).
    case allTokens

    /// Resolves a key as a predicate or the HTTP API names it: system names map to
    /// their system keys, anything else is a user field.
    public init(name: String) {
        switch name {
        case "recordID", "recordName", "___recordId", "___recordID": self = .recordName
        case "creationDate", "___createTime", "createdTimestamp": self = .creationDate
        case "modificationDate", "___modTime", "modifiedTimestamp": self = .modificationDate
        case "creatorUserRecordID", "___createdBy", "createdUserRecordName": self = .creatorUserRecordID
        case "lastModifiedUserRecordID", "___modifiedBy", "modifiedUserRecordName": self = .lastModifiedUserRecordID
        case "parent", "___parent": self = .parent
        case "share", "___share": self = .share
        case "self", "allTokens": self = .allTokens
        default: self = .field(name)
        }
    }

    /// The name a predicate would use.
    public var description: String {
        switch self {
        case .field(let name): name
        case .recordName: "recordName"
        case .creationDate: "creationDate"
        case .modificationDate: "modificationDate"
        case .creatorUserRecordID: "creatorUserRecordID"
        case .lastModifiedUserRecordID: "lastModifiedUserRecordID"
        case .parent: "parent"
        case .share: "share"
        case .allTokens: "allTokens"
        }
    }
}
