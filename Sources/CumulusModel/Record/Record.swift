/// A record: a typed bag of fields with an identity and server-kept system fields (SPEC §1).
///
/// A value type. Setting a field through the subscript records its key in
/// ``changedKeys``, which the `changedKeys` save policy uses to write only what the
/// client touched. System fields are settable here because the server sets them
/// too; the engine ignores whatever a client sends in them.
public struct Record: Sendable, Hashable {
    /// The record's type, e.g. `TodoItem`.
    public var recordType: String
    /// The record's identity.
    public var recordID: RecordID
    /// User fields by key. Prefer the subscript, which tracks ``changedKeys``.
    public private(set) var fields: [String: FieldValue]
    /// The encrypted key space: opaque values the server stores and returns but
    /// never interprets (the client library encrypts before sending).
    public private(set) var encryptedValues: [String: FieldValue]
    /// When the record was first saved (server-set).
    public var creationDate: Timestamp?
    /// When the record was last saved (server-set).
    public var modificationDate: Timestamp?
    /// Who first saved it (server-set).
    public var creatorUserRecordID: RecordID?
    /// Who last saved it (server-set).
    public var lastModifiedUserRecordID: RecordID?
    /// Opaque version tag, new on every save (server-set); `nil` before the first save.
    public var recordChangeTag: String?
    /// The parent in a share hierarchy; a reference with action `none`. Setting it
    /// marks `parent` changed, so partial save policies know to write it.
    public var parent: Reference? {
        didSet { changedKeys.insert("parent") }
    }
    /// The share this record belongs to (server-set, SPEC §9).
    public var share: Reference?
    /// Keys set or removed since the record was created, fetched or last cleared.
    public private(set) var changedKeys: Set<String>

    /// A new record; every field passed here counts as changed, as in CloudKit.
    public init(recordType: String, recordID: RecordID = RecordID(), fields: [String: FieldValue] = [:]) {
        self.recordType = recordType
        self.recordID = recordID
        self.fields = fields
        self.encryptedValues = [:]
        self.changedKeys = Set(fields.keys)
    }

    /// A field's value; assigning (or assigning `nil`) marks the key changed.
    public subscript(key: String) -> FieldValue? {
        get { fields[key] }
        set {
            fields[key] = newValue
            changedKeys.insert(key)
        }
    }

    /// A value in the encrypted key space; assigning marks the key changed.
    public subscript(encrypted key: String) -> FieldValue? {
        get { encryptedValues[key] }
        set {
            encryptedValues[key] = newValue
            changedKeys.insert(key)
        }
    }

    /// Every key with a value, user and encrypted, sorted.
    public var allKeys: [String] {
        Array(Set(fields.keys).union(encryptedValues.keys)).sorted()
    }

    /// Marks `key` changed without touching its value (what a client library does
    /// when it rebuilds a record it is about to send).
    public mutating func markChanged(_ key: String) {
        changedKeys.insert(key)
    }

    /// Forgets which keys changed: the state of a record just fetched or saved.
    public mutating func clearChangedKeys() {
        changedKeys.removeAll()
    }

    /// Replaces fields wholesale without marking them changed: how decoders and
    /// the server build a record that is already stored.
    public mutating func setStored(fields: [String: FieldValue], encryptedValues: [String: FieldValue]) {
        self.fields = fields
        self.encryptedValues = encryptedValues
    }

    /// Every reference the record holds in user fields (list elements included),
    /// with the field it sits in; `parent` and `share` are not included.
    public var fieldReferences: [(field: String, reference: Reference)] {
        fields.keys.sorted().flatMap { key in
            (fields[key]?.references ?? []).map { (key, $0) }
        }
    }

    /// The full-text tokens of the record (SPEC §1): every string field, list
    /// elements included, split at white space and lower-cased.
    public func allTokens() -> Set<String> {
        var tokens = Set<String>()
        for value in fields.values {
            for case .string(let text) in value.scalars {
                for word in text.split(whereSeparator: { $0.isWhitespace }) {
                    tokens.insert(word.lowercased())
                }
            }
        }
        return tokens
    }
}
