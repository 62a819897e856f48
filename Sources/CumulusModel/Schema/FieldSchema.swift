/// One field of a record type: its name, its type and the indexes kept for it.
public struct FieldSchema: Sendable, Hashable {
    /// The field name; system fields are the `___` names of ``SystemField``.
    public var name: String
    /// The declared type.
    public var type: SchemaFieldType
    /// The indexes kept for the field.
    public var indexes: IndexOptions

    /// A field.
    public init(name: String, type: SchemaFieldType, indexes: IndexOptions = []) {
        self.name = name
        self.type = type
        self.indexes = indexes
    }

    /// The system field this declares, if any.
    public var systemField: SystemField? { SystemField(rawValue: name) }
}

/// The index options of a field (CloudKit's field options).
public struct IndexOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `QUERYABLE`: an index for equality (`==`, `IN`, list membership, `BEGINSWITH`).
    public static let queryable = IndexOptions(rawValue: 1)
    /// `SORTABLE`: an index for ranges (`<`, `>=`, `BETWEEN`) and sorting.
    public static let sortable = IndexOptions(rawValue: 2)
    /// `SEARCHABLE`: a text index for `self CONTAINS` / token matching.
    public static let searchable = IndexOptions(rawValue: 4)

    /// Every option, in printing order.
    public static let all: IndexOptions = [.queryable, .sortable, .searchable]
}

/// The fields every record type has (CloudKit's implicit `___` fields), plus the two
/// record-structure references Cumulus can index (`___parent`, `___share`). Their
/// types are fixed; declaring one only sets its index options.
public enum SystemField: String, Sendable, Hashable, CaseIterable {
    /// The creation date.
    case createTime = "___createTime"
    /// The creator's user record.
    case createdBy = "___createdBy"
    /// The change tag.
    case etag = "___etag"
    /// The modification date.
    case modTime = "___modTime"
    /// The last modifier's user record.
    case modifiedBy = "___modifiedBy"
    /// The record's own ID (queries by `recordName` need it QUERYABLE).
    case recordID = "___recordID"
    /// The `parent` reference.
    case parent = "___parent"
    /// The `share` reference.
    case share = "___share"

    /// The field's fixed type.
    public var type: SchemaFieldType {
        switch self {
        case .createTime, .modTime: SchemaFieldType(.timestamp)
        case .etag: SchemaFieldType(.string)
        case .createdBy, .modifiedBy, .recordID, .parent, .share: SchemaFieldType(.reference)
        }
    }
}
