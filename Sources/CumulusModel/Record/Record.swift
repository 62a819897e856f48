/// A record: a typed bag of fields with an identity and server-kept system fields (SPEC §1).
///
/// A value type. Setting a field through the subscript records its key in
/// ``changedKeys``, which the `changedKeys` save policy uses to write only what the
/// client touched. System fields are settable here because the server sets them
/// too; the engine ignores whatever a client sends in them.
///
/// A record read from the views (``RecordCodec/decodeLazily(_:)``) keeps its values
/// in their stored bytes until they are read: the subscript decodes one value, and
/// ``fields`` or ``encryptedValues`` decode both sections once, for every copy.
/// Setting a value decodes them for good. Which form a record is in never shows in
/// what it answers, or in equality.
public struct Record: Sendable, Hashable {
    /// The record's type, e.g. `TodoItem`.
    public var recordType: String
    /// The record's identity.
    public var recordID: RecordID
    /// User fields by key. Prefer the subscript, which tracks ``changedKeys``.
    public var fields: [String: FieldValue] { encoded?.fields ?? decodedFields }
    /// The encrypted key space: opaque values the server stores and returns but
    /// never interprets (the client library encrypts before sending).
    public var encryptedValues: [String: FieldValue] { encoded?.encrypted ?? decodedEncrypted }
    /// The values, once decoded or set; empty while `encoded` holds them.
    private var decodedFields: [String: FieldValue]
    private var decodedEncrypted: [String: FieldValue]
    /// The values still in their stored bytes, or `nil` once decoded or set.
    private(set) var encoded: EncodedValues?
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
        self.decodedFields = fields
        self.decodedEncrypted = [:]
        self.encoded = nil
        self.changedKeys = Set(fields.keys)
    }

    /// A field's value; assigning (or assigning `nil`) marks the key changed.
    public subscript(key: String) -> FieldValue? {
        get { encoded.map { $0.value(key, encrypted: false) } ?? decodedFields[key] }
        set {
            decodeForWriting()
            decodedFields[key] = newValue
            changedKeys.insert(key)
        }
    }

    /// A value in the encrypted key space; assigning marks the key changed.
    public subscript(encrypted key: String) -> FieldValue? {
        get { encoded.map { $0.value(key, encrypted: true) } ?? decodedEncrypted[key] }
        set {
            decodeForWriting()
            decodedEncrypted[key] = newValue
            changedKeys.insert(key)
        }
    }

    /// Every key with a value, user and encrypted, sorted.
    public var allKeys: [String] {
        if let encoded {
            return Array(Set(encoded.keys(encrypted: false)).union(encoded.keys(encrypted: true))).sorted()
        }
        return Array(Set(decodedFields.keys).union(decodedEncrypted.keys)).sorted()
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
        self.decodedFields = fields
        self.decodedEncrypted = encryptedValues
        self.encoded = nil
    }

    /// Keeps the values in their stored bytes (``RecordCodec/decodeLazily(_:)``).
    mutating func setStored(encoded: EncodedValues) {
        decodedFields = [:]
        decodedEncrypted = [:]
        self.encoded = encoded
    }

    /// Keeps only the user fields and encrypted values whose key `keep` accepts,
    /// without marking anything changed: a read's `desiredKeys`. Values still in
    /// their stored bytes are decoded only if kept.
    public mutating func retainValues(where keep: (String) -> Bool) {
        if let encoded {
            let kept = encoded.values(keeping: keep)
            setStored(fields: kept.fields, encryptedValues: kept.encrypted)
        } else {
            decodedFields = decodedFields.filter { keep($0.key) }
            decodedEncrypted = decodedEncrypted.filter { keep($0.key) }
        }
    }

    /// Calls `body` with each user field whose key `accept` takes: for a record whose
    /// values are still in their stored bytes, only those are decoded (an index
    /// reads the few fields it declares, not the whole record).
    public func forEachField(where accept: (String) -> Bool, _ body: (String, FieldValue) throws -> Void) rethrows {
        if let encoded {
            try encoded.forEachField(where: accept, body)
        } else {
            for (key, value) in decodedFields where accept(key) { try body(key, value) }
        }
    }

    /// Calls `body` with every reference the user fields hold (list elements
    /// included), in no particular order: for callers that collect them into a set
    /// (the reference graph), without sorting keys or decoding other values.
    public func forEachFieldReference(_ body: (Reference) throws -> Void) rethrows {
        if let encoded {
            try encoded.forEachReference(body)
        } else {
            for value in decodedFields.values { for reference in value.references { try body(reference) } }
        }
    }

    /// Moves values out of their stored bytes before one is set.
    private mutating func decodeForWriting() {
        guard let encoded else { return }
        setStored(fields: encoded.fields, encryptedValues: encoded.encrypted)
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

    /// Whether two records are equal in every property, values compared as values:
    /// a record whose values are still in their stored bytes equals the same record
    /// decoded.
    public static func == (lhs: Record, rhs: Record) -> Bool {
        guard lhs.recordType == rhs.recordType, lhs.recordID == rhs.recordID, lhs.creationDate == rhs.creationDate,
            lhs.modificationDate == rhs.modificationDate, lhs.creatorUserRecordID == rhs.creatorUserRecordID,
            lhs.lastModifiedUserRecordID == rhs.lastModifiedUserRecordID, lhs.recordChangeTag == rhs.recordChangeTag,
            lhs.parent == rhs.parent, lhs.share == rhs.share, lhs.changedKeys == rhs.changedKeys
        else { return false }
        if let left = lhs.encoded, let right = rhs.encoded, left.home == right.home, left.bytes == right.bytes {
            return true
        }
        return lhs.fields == rhs.fields && lhs.encryptedValues == rhs.encryptedValues
    }

    /// Hashes every property, values as values, so equal records hash equal whichever
    /// form holds their values.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(recordType)
        hasher.combine(recordID)
        hasher.combine(creationDate)
        hasher.combine(modificationDate)
        hasher.combine(creatorUserRecordID)
        hasher.combine(lastModifiedUserRecordID)
        hasher.combine(recordChangeTag)
        hasher.combine(parent)
        hasher.combine(share)
        hasher.combine(changedKeys)
        hasher.combine(fields)
        hasher.combine(encryptedValues)
    }
}
