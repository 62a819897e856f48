import Crypto
import CumulusModel
import Synchronization

/// Keys of the query indexes (`Docs/LOG-FORMAT.md` §9):
///
/// ```
/// fieldIndex  zoneKey(16) ‖ typeHash(8) ‖ fieldHash(8) ‖ kind ‖ value ‖ record name   → empty
/// tokenIndex  zoneKey(16) ‖ typeHash(8) ‖ escaped token ‖ 0x00 0x00 ‖ created(8) ‖ record name → empty
/// ```
///
/// Values use ``OrderedEncoding``, so a range of values is a range of keys, and
/// records with equal values follow in name order. Only fields the schema indexes
/// (``EffectiveSchema``) have entries: a QUERYABLE or SORTABLE field has its ordered
/// values (a QUERYABLE string also its exact bytes, for `BEGINSWITH`); every element
/// of a list field is indexed; system fields use their `___` names, which no user
/// field can take. The token index holds the words of SEARCHABLE fields, each word's
/// records in creation order (``appendCreated(_:to:)``). Hashes are the first 8 bytes
/// of SHA-256, keeping keys short whatever the type and field names.
public enum IndexKeys {
    /// The index name of a query key; `nil` for keys with no field index
    /// (`recordName` is the records table's own order, tokens have their own index).
    public static func fieldName(for key: QueryKey) -> String? {
        switch key {
        case .field(let name): name
        case .recordName, .allTokens: nil
        default: SystemField(key)?.rawValue
        }
    }

    /// Type and field names are few and repeat on every save: remember their hashes.
    private static let hashes = Mutex<[String: [UInt8]]>([:])

    static func hash8(_ text: String) -> [UInt8] {
        if let known = hashes.withLock({ $0[text] }) { return known }
        let hash = Array(SHA256.hash(data: Array(text.utf8)).prefix(8))
        hashes.withLock { cache in
            if cache.count >= 65_536 { cache.removeAll(keepingCapacity: true) }
            cache[text] = hash
        }
        return hash
    }

    /// The prefix of one field's entries for one type in one zone.
    public static func fieldPrefix(_ zoneKey: [UInt8], type: String, field: String) -> [UInt8] {
        zoneKey + hash8(type) + hash8(field)
    }

    /// The prefix of one type's token entries in one zone.
    public static func tokenPrefix(_ zoneKey: [UInt8], type: String) -> [UInt8] {
        zoneKey + hash8(type)
    }

    /// Every field-index key of `record` that `schema` keeps, sorted and unique: of
    /// its user fields, its system fields (`___createTime`, `___parent`…), or both.
    public static func fieldEntries(
        of record: Record, zoneKey: [UInt8], schema: EffectiveSchema, user: Bool = true, system: Bool = true
    ) -> [[UInt8]] {
        // Sorted and deduplicated at the end rather than kept in a Set: hashing byte
        // arrays was a measurable share of every save's view work (perf, replication bench).
        var entries: [[UInt8]] = []
        forEachFieldEntry(of: record, zoneKey: zoneKey, schema: schema, user: user, system: system) { entries.append($0) }
        return sortedUnique(entries)
    }

    /// Calls `body` with each field-index key of `record` that `schema` keeps, in no
    /// particular order and possibly repeated (two equal list elements). Every key is
    /// built in one reused buffer: a caller that only writes the keys (a new record's
    /// entries, a deleted one's) allocates nothing per key.
    ///
    /// `user` and `system` choose the fields walked: the user fields' keys follow from
    /// what a client sent, so they can be made before the server sets the system
    /// fields (``ContentDerivation``).
    public static func forEachFieldEntry(
        of record: Record, zoneKey: [UInt8], schema: EffectiveSchema, user: Bool = true, system: Bool = true,
        _ body: ([UInt8]) -> Void
    ) {
        let type = record.recordType
        let typeHash = hash8(type)
        let name = Array(record.recordID.recordName.utf8)
        var key: [UInt8] = []
        key.reserveCapacity(zoneKey.count + 16 + 64 + name.count)
        func add(_ field: String, _ value: FieldValue, _ options: IndexOptions) {
            guard !options.isDisjoint(with: [.queryable, .sortable]) else { return }
            let fieldHash = hash8(field)
            func startKey() {
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: zoneKey)
                key.append(contentsOf: typeHash)
                key.append(contentsOf: fieldHash)
            }
            value.forEachScalar { element in
                startKey()
                guard OrderedEncoding.appendEncoded(element, to: &key) else { return }
                key.append(contentsOf: name)
                body(key)
                if options.contains(.queryable), case .string(let text) = element {
                    startKey()
                    OrderedEncoding.appendExact(text, to: &key)
                    key.append(contentsOf: name)
                    body(key)
                }
            }
        }
        let rules = schema.typeIndexes(type)
        if user {
            record.forEachField(where: { rules.hasFieldIndexes(onField: $0) }) { field, value in
                add(field, value, rules.indexes(ofField: field, isText: value.isText))
            }
        }
        guard system else { return }
        func addSystem(_ field: SystemField, _ value: FieldValue?) {
            guard let value else { return }
            add(field.rawValue, value, rules.indexes(of: field))
        }
        addSystem(.createTime, record.creationDate.map(FieldValue.timestamp))
        addSystem(.modTime, record.modificationDate.map(FieldValue.timestamp))
        addSystem(.createdBy, record.creatorUserRecordID.map { .reference(Reference(recordID: $0)) })
        addSystem(.modifiedBy, record.lastModifiedUserRecordID.map { .reference(Reference(recordID: $0)) })
        addSystem(.parent, record.parent.map(FieldValue.reference))
        addSystem(.share, record.share.map(FieldValue.reference))
    }

    /// Every token-index key of `record` that `schema` keeps (its SEARCHABLE fields),
    /// sorted and unique.
    public static func tokenEntries(of record: Record, zoneKey: [UInt8], schema: EffectiveSchema) -> [[UInt8]] {
        // The escaping preserves order and ends with a terminator, so sorting keys
        // sorts tokens, and two long tokens cut to one key are kept once.
        var keys: [[UInt8]] = []
        forEachTokenEntry(of: record, zoneKey: zoneKey, schema: schema) { keys.append($0) }
        return sortedUnique(keys)
    }

    /// Calls `body` with each token-index key of `record` that `schema` keeps, in text
    /// order, repeats included, built in one reused buffer (see ``forEachFieldEntry``).
    public static func forEachTokenEntry(
        of record: Record, zoneKey: [UInt8], schema: EffectiveSchema, _ body: ([UInt8]) -> Void
    ) {
        let type = record.recordType
        let prefix = tokenPrefix(zoneKey, type: type)
        var posting: [UInt8] = []
        appendCreated(record, to: &posting)
        posting.append(contentsOf: record.recordID.recordName.utf8)
        var key = prefix
        key.reserveCapacity(prefix.count + 32 + posting.count)
        let rules = schema.typeIndexes(type)
        Tokenizer.forEachTokenUTF8(of: record, where: rules.isSearchable) {
            key.removeLast(key.count - prefix.count)
            OrderedEncoding.appendEscaped($0, to: &key)
            key.append(contentsOf: posting)
            body(key)
        }
    }

    /// Calls `body` with the token-index key of each of `escapedTokens` (escaped and
    /// terminated, as in a key) for the record `name` of type hash `typeHash` created at
    /// `created` in the zone `zoneKey`, built in one reused buffer: the entries a
    /// pending-token merge writes or deletes (``PendingTokens``).
    static func forEachTokenEntry(
        zoneKey: some Collection<UInt8>, typeHash: some Collection<UInt8>, escapedTokens: [ArraySlice<UInt8>],
        created: some Collection<UInt8>, name: some Collection<UInt8>, _ body: ([UInt8]) throws -> Void
    ) rethrows {
        var key: [UInt8] = []
        key.reserveCapacity(zoneKey.count + typeHash.count + 64 + created.count + name.count)
        key.append(contentsOf: zoneKey)
        key.append(contentsOf: typeHash)
        let prefix = key.count
        for token in escapedTokens {
            key.removeLast(key.count - prefix)
            key.append(contentsOf: token)
            key.append(contentsOf: created)
            key.append(contentsOf: name)
            try body(key)
        }
    }

    /// Bytes a token entry holds between its token and the record name: the record's
    /// creation time (milliseconds, ``OrderedEncoding/appendInt(_:to:)``; 0 if it has
    /// none), which an edit never changes.
    public static let createdBytes = 8

    /// Appends the creation time that orders a token's records. Keyed by name alone,
    /// with the random names clients give records (UUIDs), a batch's entries for one
    /// common word landed on as many distinct leaf pages as it had records, each
    /// written whole at commit; keyed by creation first, a batch of new records appends
    /// at the end of each word's range and dirties about one page per word, as FTS5's
    /// row numbers do (400-record operations with UUID names: 1.8× the rate).
    static func appendCreated(_ record: Record, to key: inout [UInt8]) {
        OrderedEncoding.appendInt(record.creationDate?.millisecondsSince1970 ?? 0, to: &key)
    }

    /// `keys` in byte order without repeats.
    static func sortedUnique(_ keys: [[UInt8]]) -> [[UInt8]] {
        // Byte order compared a word at a time (`UTF8Order`): keys share their first 24
        // bytes (zone and type), which `lexicographicallyPrecedes` walked one element at
        // a time, most of sorting a record's keys in the profile.
        UTF8Order.sorted(keys) { UTF8Order.compare($0, $1) }
    }

    /// The key of one token's entries (prefix ‖ escaped token ‖ terminator); each
    /// entry goes on with its record's creation time (``createdBytes``) and name.
    public static func tokenKey(_ prefix: [UInt8], _ token: String) -> [UInt8] {
        var key = prefix
        OrderedEncoding.appendEscaped(token.utf8, to: &key)
        return key
    }

    /// Splits the part of a field-index key after its field prefix into the encoded
    /// value (kind included) and the record name; `nil` if malformed.
    public static func splitValue(_ suffix: UnsafeRawBufferPointer) -> (value: [UInt8], name: String)? {
        guard let end = valueLength(suffix) else { return nil }
        return (Array(UnsafeRawBufferPointer(rebasing: suffix[0..<end])), name(of: suffix, after: end))
    }

    /// The record name of a field-index key's suffix (as ``splitValue(_:)`` splits
    /// it), without copying the value: for a caller that only collects names (a
    /// candidate set), where the copy was one allocation per entry.
    public static func recordName(afterValue suffix: UnsafeRawBufferPointer) -> String? {
        valueLength(suffix).map { name(of: suffix, after: $0) }
    }

    /// The name that follows a value ending at `end` in a key's suffix.
    private static func name(of suffix: UnsafeRawBufferPointer, after end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: suffix[end...]), as: UTF8.self)
    }

    /// The length of the encoded value (kind included) that `bytes` starts with, or
    /// `nil` if it is malformed or cut short: numbers have fixed widths, strings,
    /// references and bytes end at their `00 00` terminator.
    public static func valueLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let kindByte = bytes.first, let kind = OrderedEncoding.Kind(rawValue: kindByte) else { return nil }
        var end: Int
        switch kind {
        case .int64, .double, .timestamp: end = 9
        case .location: end = 17
        case .foldedString, .exactString, .reference, .bytes:
            end = 1
            while true {
                guard end + 1 < bytes.count else { return nil }
                if bytes[end] == 0 {
                    if bytes[end + 1] == 0 { end += 2; break }
                    end += 2  // escaped zero
                } else {
                    end += 1
                }
            }
        }
        return end <= bytes.count ? end : nil
    }
}
