/// A record: a typed bag of fields with an identity and server-kept system fields
/// (`Docs/DATA-MODEL.md`, "Records").
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
///
/// Every property lives in one copy-on-write box, so a copy of a record — into an
/// event, a result page, a plan's overlay — is one retain instead of one per string
/// and collection it holds (retain and release were a fifth of a query page's
/// profile), and a record is a pointer wide wherever it is stored.
public struct Record: Sendable, Hashable {
    /// The properties. Mutated only through ``writable``, which copies the box first
    /// unless this record holds the only reference: the value semantics of the
    /// standard library's collections, and what makes sharing it across threads safe.
    private final class Storage: @unchecked Sendable {
        var recordType: String
        var recordID: RecordID
        /// The values, once decoded or set; empty while `encoded` holds them.
        var decodedFields: [String: FieldValue]
        var decodedEncrypted: [String: FieldValue] = [:]
        /// The values still in their stored bytes, or `nil` once decoded or set.
        var encoded: EncodedValues?
        var creationDate: Timestamp?
        var modificationDate: Timestamp?
        var creatorUserRecordID: RecordID?
        var lastModifiedUserRecordID: RecordID?
        var recordChangeTag: String?
        var parent: Reference?
        var share: Reference?
        var changedKeys: Set<String>
        /// What was wrong with the stored values this record held when a setter
        /// decoded them (they then read as empty): kept so that encoding it throws
        /// instead of writing the loss.
        var valuesFailure: CumulusError?
        /// The record's whole encoding, once measured for storage
        /// (``RecordCodec/encodeKeepingValues(_:)``); dropped by any change, so it is
        /// always what encoding the record now would write. Not copied: a copy is
        /// made only to be changed.
        var wholeEncoding: [UInt8]?

        init(recordType: String, recordID: RecordID, fields: [String: FieldValue], changedKeys: Set<String>) {
            self.recordType = recordType
            self.recordID = recordID
            self.decodedFields = fields
            self.changedKeys = changedKeys
        }

        func copy() -> Storage {
            let copy = Storage(recordType: recordType, recordID: recordID, fields: decodedFields, changedKeys: changedKeys)
            copy.decodedEncrypted = decodedEncrypted
            copy.encoded = encoded
            copy.creationDate = creationDate
            copy.modificationDate = modificationDate
            copy.creatorUserRecordID = creatorUserRecordID
            copy.lastModifiedUserRecordID = lastModifiedUserRecordID
            copy.recordChangeTag = recordChangeTag
            copy.parent = parent
            copy.share = share
            copy.valuesFailure = valuesFailure
            return copy
        }
    }

    private var storage: Storage

    /// The box, made this record's own first if another record shares it.
    private var writable: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            storage.wholeEncoding = nil
            return storage
        }
    }

    /// The record's whole encoding, if it was kept (``keepWholeEncoding(_:)``) and
    /// nothing changed since.
    var wholeEncoding: [UInt8]? { storage.wholeEncoding }

    /// Keeps `bytes`, just encoded from this record as it is, as its whole encoding:
    /// a saved record is measured (``RecordValidator/validateForStorage(_:in:rulesHeld:)``),
    /// then written into the log's frame and into the view, and only the first of
    /// the three encodes it.
    mutating func keepWholeEncoding(_ bytes: [UInt8]) {
        writable.wholeEncoding = bytes
    }

    /// The record's type, e.g. `TodoItem`.
    public var recordType: String {
        get { storage.recordType }
        set { writable.recordType = newValue }
    }
    /// The record's identity.
    public var recordID: RecordID {
        get { storage.recordID }
        set { writable.recordID = newValue }
    }
    /// User fields by key. Prefer the subscript, which tracks ``changedKeys``.
    public var fields: [String: FieldValue] { storage.encoded?.fields ?? storage.decodedFields }
    /// The encrypted key space: opaque values the server stores and returns but
    /// never interprets (the client library encrypts before sending).
    public var encryptedValues: [String: FieldValue] { storage.encoded?.encrypted ?? storage.decodedEncrypted }
    /// The values still in their stored bytes, or `nil` once decoded or set.
    var encoded: EncodedValues? { storage.encoded }
    /// How many bytes the record's values take as stored, for a record read from the
    /// views whose values are still in those bytes; `nil` otherwise. What a read
    /// counts against the bytes one response may hold.
    public var storedValueByteCount: Int? { storage.encoded?.bytes.count }
    /// When the record was first saved (server-set).
    public var creationDate: Timestamp? {
        get { storage.creationDate }
        set { writable.creationDate = newValue }
    }
    /// When the record was last saved (server-set).
    public var modificationDate: Timestamp? {
        get { storage.modificationDate }
        set { writable.modificationDate = newValue }
    }
    /// Who first saved it (server-set).
    public var creatorUserRecordID: RecordID? {
        get { storage.creatorUserRecordID }
        set { writable.creatorUserRecordID = newValue }
    }
    /// Who last saved it (server-set).
    public var lastModifiedUserRecordID: RecordID? {
        get { storage.lastModifiedUserRecordID }
        set { writable.lastModifiedUserRecordID = newValue }
    }
    /// Opaque version tag, new on every save (server-set); `nil` before the first save.
    public var recordChangeTag: String? {
        get { storage.recordChangeTag }
        set { writable.recordChangeTag = newValue }
    }
    /// The parent in a share hierarchy; a reference with action `none`. Setting it
    /// marks `parent` changed, so partial save policies know to write it.
    public var parent: Reference? {
        get { storage.parent }
        set {
            let box = writable
            box.parent = newValue
            box.changedKeys.insert("parent")
        }
    }
    /// The share this record belongs to (server-set; `Docs/DATA-MODEL.md`, "Sharing").
    public var share: Reference? {
        get { storage.share }
        set { writable.share = newValue }
    }
    /// Keys set or removed since the record was created, fetched or last cleared.
    public var changedKeys: Set<String> { storage.changedKeys }

    /// A new record; every field passed here counts as changed, as in CloudKit.
    public init(recordType: String, recordID: RecordID = RecordID(), fields: [String: FieldValue] = [:]) {
        storage = Storage(recordType: recordType, recordID: recordID, fields: fields, changedKeys: Set(fields.keys))
    }

    /// A record as its stored header describes it, with no values and no changed keys:
    /// what a decode builds, in one box, without the setters' copy checks or the
    /// changed-keys set a caller's new record starts with (together about a twentieth
    /// of a read's decode in a profile; `Docs/PERFORMANCE.md` as of the fifteenth session, in git).
    init(
        storedType recordType: String, recordID: RecordID, creationDate: Timestamp?, modificationDate: Timestamp?,
        creator: RecordID?, modifier: RecordID?, changeTag: String?, parent: Reference?, share: Reference?
    ) {
        let box = Storage(recordType: recordType, recordID: recordID, fields: [:], changedKeys: [])
        box.creationDate = creationDate
        box.modificationDate = modificationDate
        box.creatorUserRecordID = creator
        box.lastModifiedUserRecordID = modifier
        box.recordChangeTag = changeTag
        box.parent = parent
        box.share = share
        storage = box
    }

    /// A field's value; assigning (or assigning `nil`) marks the key changed.
    public subscript(key: String) -> FieldValue? {
        get { storage.encoded.map { $0.value(key, encrypted: false) } ?? storage.decodedFields[key] }
        set {
            decodeForWriting()
            let box = writable
            box.decodedFields[key] = newValue
            box.changedKeys.insert(key)
        }
    }

    /// A value in the encrypted key space; assigning marks the key changed.
    public subscript(encrypted key: String) -> FieldValue? {
        get { storage.encoded.map { $0.value(key, encrypted: true) } ?? storage.decodedEncrypted[key] }
        set {
            decodeForWriting()
            let box = writable
            box.decodedEncrypted[key] = newValue
            box.changedKeys.insert(key)
        }
    }

    /// Every key with a value, user and encrypted, sorted.
    public var allKeys: [String] {
        if let encoded {
            return Array(Set(encoded.keys(encrypted: false)).union(encoded.keys(encrypted: true))).sorted()
        }
        return Array(Set(storage.decodedFields.keys).union(storage.decodedEncrypted.keys)).sorted()
    }

    /// Marks `key` changed without touching its value (what a client library does
    /// when it rebuilds a record it is about to send).
    public mutating func markChanged(_ key: String) {
        writable.changedKeys.insert(key)
    }

    /// Forgets which keys changed: the state of a record just fetched or saved.
    public mutating func clearChangedKeys() {
        guard !storage.changedKeys.isEmpty else { return }
        writable.changedKeys.removeAll()
    }

    /// Replaces fields wholesale without marking them changed: how decoders and
    /// the server build a record that is already stored.
    public mutating func setStored(fields: [String: FieldValue], encryptedValues: [String: FieldValue]) {
        let box = writable
        box.decodedFields = fields
        box.decodedEncrypted = encryptedValues
        box.encoded = nil
    }

    /// Takes `other`'s user fields and encrypted values as `other` holds them, without
    /// marking anything changed: a record whose values are already encoded
    /// (``RecordCodec/encodeKeepingValues(_:)``) passes its bytes on, so the server
    /// builds the stored record from a client's values without encoding them again.
    public mutating func setStoredValues(from other: Record) {
        if let encoded = other.encoded {
            setStored(encoded: encoded)
        } else {
            setStored(fields: other.storage.decodedFields, encryptedValues: other.storage.decodedEncrypted)
        }
        if let failure = other.storage.valuesFailure { writable.valuesFailure = failure }
    }

    /// Keeps the values in their stored bytes (``RecordCodec/decodeLazily(_:)``).
    mutating func setStored(encoded: EncodedValues) {
        let box = writable
        box.decodedFields = [:]
        box.decodedEncrypted = [:]
        box.encoded = encoded
    }

    /// Keeps only the user fields and encrypted values whose key `keep` accepts,
    /// without marking anything changed: a read's `desiredKeys`. Values still in
    /// their stored bytes are decoded only if kept.
    public mutating func retainValues(where keep: (String) -> Bool) {
        if let encoded {
            takeValues(from: encoded, keeping: keep)
        } else {
            let box = writable
            box.decodedFields = box.decodedFields.filter { keep($0.key) }
            box.decodedEncrypted = box.decodedEncrypted.filter { keep($0.key) }
        }
    }

    /// Calls `body` with each user field whose key `accept` takes: for a record whose
    /// values are still in their stored bytes, only those are decoded (an index
    /// reads the few fields it declares, not the whole record).
    public func forEachField(where accept: (String) -> Bool, _ body: (String, FieldValue) throws -> Void) rethrows {
        if let encoded {
            try encoded.forEachField(where: accept, body)
        } else {
            for (key, value) in storage.decodedFields where accept(key) { try body(key, value) }
        }
    }

    /// Calls `body` with the UTF-8 bytes of every string (list elements included) in
    /// the user fields whose key `accept` takes, valid only during `body`: stored values
    /// are read in place, without a `String` per value.
    public func forEachString(where accept: (String) -> Bool, _ body: (UnsafeRawBufferPointer) -> Void) {
        if let encoded {
            encoded.forEachString(where: accept, body)
        } else {
            for (key, value) in storage.decodedFields where accept(key) { value.forEachStringUTF8(body) }
        }
    }

    /// Calls `body` with every reference the user fields hold (list elements
    /// included), in no particular order: for callers that collect them into a set
    /// (the reference graph), without sorting keys or decoding other values.
    public func forEachFieldReference(_ body: (Reference) throws -> Void) rethrows {
        if let encoded {
            try encoded.forEachReference(body)
        } else {
            for value in storage.decodedFields.values { try value.forEachReference(body) }
        }
    }

    /// Calls `body` with every asset the user fields hold (list elements included),
    /// in no particular order, decoding only asset values: what the asset reference
    /// counts and the upload checks read of every saved record. Assets cannot be
    /// encrypted, so the encrypted key space holds none.
    public func forEachFieldAsset(_ body: (Asset) throws -> Void) rethrows {
        if let encoded {
            try encoded.forEachAsset(body)
        } else {
            for value in storage.decodedFields.values { try value.forEachAsset(body) }
        }
    }

    /// Moves values out of their stored bytes before one is set.
    private mutating func decodeForWriting() {
        guard let encoded else { return }
        takeValues(from: encoded)
    }

    /// Moves the values `keep` accepts out of their stored bytes for good, carrying
    /// any damage a read met (the values then read as empty), so that encoding the
    /// record still refuses it.
    private mutating func takeValues(from encoded: EncodedValues, keeping keep: (String) -> Bool = { _ in true }) {
        let kept = encoded.values(keeping: keep)
        setStored(fields: kept.fields, encryptedValues: kept.encrypted)
        if let failure = encoded.failure { writable.valuesFailure = failure }
    }

    /// Checks every value this record still holds in its stored bytes, decoding them
    /// (as the next read would): the malformation found, or `nil`.
    ///
    /// Records that reads return (fetch, query, change feeds) keep their values
    /// unchecked until read (``RecordCodec/decodeForReading(_:hints:)``), as SQLite
    /// checks a column only when it is read. A read that meets malformed bytes — a
    /// damaged data file — answers as if the record had no values; a caller that
    /// hands a record on (the server writing it as JSON) asks here first and reports
    /// the error instead. Always `nil` for records built in memory or decoded whole.
    public func storedValuesError() -> CumulusError? {
        // The check keeps what it finds, which the failure below then reports.
        try? storage.encoded?.checkAll()
        return storedValuesFailure
    }

    /// The malformation a read of this record's stored values already met, without
    /// reading more (``storedValuesError()`` reads them all): for a caller that read a
    /// few values (a query's filter) and must not mistake damage for absence.
    ///
    /// The error is `internalError`: the bytes are the server's, not the client's.
    public var storedValuesFailure: CumulusError? {
        guard let failure = storage.valuesFailure ?? storage.encoded?.failure else { return nil }
        return CumulusError(
            .internalError,
            "the stored values of record \(recordID.recordName) are damaged (\(failure.message))",
            recordID: recordID)
    }

    /// Every reference the record holds in user fields (list elements included),
    /// with the field it sits in; `parent` and `share` are not included.
    public var fieldReferences: [(field: String, reference: Reference)] {
        // Only fields that hold references are sorted (usually one or none), not
        // every key of the record: the planner asks this of every record it saves.
        var holding: [(field: String, value: FieldValue)] = []
        if let encoded {
            // Kept by the values once found (reference values are the only ones
            // holding references).
            holding = encoded.typedFields().references.map { (field: $0.key, value: $0.value) }
        } else {
            for (key, value) in storage.decodedFields {
                var holds = false
                value.forEachReference { _ in holds = true }
                if holds { holding.append((key, value)) }
            }
        }
        if holding.count > 1 { holding.sort { $0.field < $1.field } }
        var found: [(field: String, reference: Reference)] = []
        for (field, value) in holding { value.forEachReference { found.append((field, $0)) } }
        return found
    }

    /// The full-text tokens of the record: every string field, list elements included,
    /// split at white space and lower-cased (`Docs/DATA-MODEL.md`, "Records").
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
        if lhs.storage === rhs.storage { return true }
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
