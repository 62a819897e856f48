/// The rules a schema imposes on one container environment, in one place: which
/// indexes a field has, what a save may contain, what a query may ask, who may do
/// what. Views (index writes), the planner (saves, just-in-time growth, grants) and
/// the query path (index checks) all ask this type, so they cannot disagree.
///
/// **Development** grows just in time: a field or type the schema does not declare
/// gets ``justInTimeIndexes(for:)`` (everything queryable, as a CloudKit developer
/// expects in the sandbox), and the planner logs its addition. A declared field keeps
/// exactly the options declared, so an imported development schema can turn indexes
/// off. **Production** knows only what is declared: nothing else is stored or indexed.
public struct EffectiveSchema: Sendable, Hashable {
    /// The schema as stored.
    public let schema: Schema
    /// Its environment.
    public let environment: DatabaseID.Environment
    /// Types and their fields by name: every saved record asks about each of its
    /// fields, so lookups must not walk the schema. Built once per schema value
    /// (views cache the whole `EffectiveSchema`).
    private let types: [String: (type: RecordTypeSchema, fields: [String: FieldSchema])]

    /// The rules of `schema` in `environment`.
    public init(_ schema: Schema, environment: DatabaseID.Environment) {
        self.schema = schema
        self.environment = environment
        var types: [String: (type: RecordTypeSchema, fields: [String: FieldSchema])] = [:]
        for type in schema.recordTypes {
            types[type.name] = (type, Dictionary(type.fields.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last }))
        }
        self.types = types
    }

    /// Equal when schema and environment are (the lookups follow from them).
    public static func == (lhs: EffectiveSchema, rhs: EffectiveSchema) -> Bool {
        lhs.schema == rhs.schema && lhs.environment == rhs.environment
    }

    /// Hashes schema and environment.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(schema)
        hasher.combine(environment)
    }

    /// The declared record type `name`, or `nil`.
    public func recordType(_ name: String) -> RecordTypeSchema? { types[name]?.type }

    /// The declared field `field` of type `type`, or `nil`.
    public func field(_ field: String, of type: String) -> FieldSchema? { types[type]?.fields[field] }

    /// Whether undeclared types and fields are accepted (and get just-in-time indexes).
    public var growsJustInTime: Bool { environment == .development }

    // MARK: - Indexes

    /// The indexes a just-in-time field of `type` gets: equality and ranges for any
    /// indexable type, text search for strings; none for assets and encrypted values.
    public static func justInTimeIndexes(for type: SchemaFieldType) -> IndexOptions {
        if type.isEncrypted || type.primitive == .asset { return [] }
        return type.primitive == .string ? .all : [.queryable, .sortable]
    }

    /// The indexes a just-in-time record type gives its system fields.
    public static func justInTimeIndexes(for field: SystemField) -> IndexOptions {
        field == .etag ? [] : [.queryable, .sortable]
    }

    /// The indexes kept for user field `field` of record type `type`; `isText` says
    /// whether the value at hand is a string (or list of strings), which decides the
    /// just-in-time default of an undeclared field.
    public func indexes(ofField field: String, in type: String, isText: Bool) -> IndexOptions {
        typeIndexes(type).indexes(ofField: field, isText: isText)
    }

    /// The indexes kept for a system field of `type`: as declared when the type is
    /// declared; all of them for an undeclared type in development (a log written
    /// before schemas existed, or a type the planner is about to add).
    public func indexes(of field: SystemField, in type: String) -> IndexOptions {
        typeIndexes(type).indexes(of: field)
    }

    /// The index rules of record type `type`, looked up once: a record's index keys
    /// ask about each of its fields, and looking the type up again for every field
    /// was most of the string hashing of a save.
    public func typeIndexes(_ type: String) -> TypeIndexes {
        TypeIndexes(declared: types[type]?.fields, growsJustInTime: growsJustInTime)
    }

    /// The index rules of one record type (``EffectiveSchema/typeIndexes(_:)``).
    public struct TypeIndexes: Sendable {
        /// The type's declared fields, or `nil` if the type is not declared.
        let declared: [String: FieldSchema]?
        let growsJustInTime: Bool

        /// The indexes kept for user field `field` (see
        /// ``EffectiveSchema/indexes(ofField:in:isText:)``).
        public func indexes(ofField field: String, isText: Bool) -> IndexOptions {
            if let declared = declared?[field] { return declared.indexes }
            guard growsJustInTime else { return [] }
            return isText ? .all : [.queryable, .sortable]
        }

        /// Whether user field `field` has a field-index entry (QUERYABLE or SORTABLE),
        /// whatever its value: a field only SEARCHABLE has its words in the token index
        /// alone, which keeps each record's words (in its `byType` entry), so replacing or
        /// deleting a record's field entries decodes only these fields.
        public func hasFieldIndexes(onField field: String) -> Bool {
            if let declared = declared?[field] { return !declared.indexes.isDisjoint(with: [.queryable, .sortable]) }
            return growsJustInTime
        }

        /// Whether the words of user field `field` are indexed (SEARCHABLE): what the
        /// token index holds and what `self CONTAINS` reads.
        public func isSearchable(_ field: String) -> Bool {
            indexes(ofField: field, isText: true).contains(.searchable)
        }

        /// The indexes kept for system field `field`.
        public func indexes(of field: SystemField) -> IndexOptions {
            if let declared { return declared[field.rawValue]?.indexes ?? [] }
            return growsJustInTime ? EffectiveSchema.justInTimeIndexes(for: field) : []
        }
    }

    /// The fields of `type` whose index options differ between `self` and `other`
    /// (user fields by name, system fields by their `___` name), for either kind of
    /// value; empty when an index rebuild of the type would change nothing.
    public func indexDifferences(to other: EffectiveSchema, in type: String) -> Set<String> {
        var names = Set<String>()
        for schema in [schema, other.schema] {
            for field in schema.recordType(type)?.fields ?? [] { names.insert(field.name) }
        }
        var changed = Set<String>()
        for system in SystemField.allCases where indexes(of: system, in: type) != other.indexes(of: system, in: type) {
            changed.insert(system.rawValue)
        }
        for name in names where SystemField(rawValue: name) == nil {
            for isText in [false, true]
            where indexes(ofField: name, in: type, isText: isText) != other.indexes(ofField: name, in: type, isText: isText) {
                changed.insert(name)
            }
        }
        return changed
    }

    // MARK: - Saves

    /// The schema type of a value, as just-in-time growth records it; `nil` for an
    /// empty list, whose element type is not known yet.
    public static func inferredType(of value: FieldValue, encrypted: Bool) -> SchemaFieldType? {
        func primitive(_ scalar: FieldValue.ValueType) -> SchemaFieldType.Primitive {
            switch scalar {
            case .string: .string
            case .int64: .int64
            case .double: .double
            case .timestamp: .timestamp
            case .bytes: .bytes
            case .reference: .reference
            case .location: .location
            case .asset: .asset
            }
        }
        if case .list(let items) = value {
            guard let first = items.first?.scalarType else { return nil }
            return SchemaFieldType(primitive(first), encrypted: encrypted, list: true)
        }
        guard let scalar = value.scalarType else { return nil }
        return SchemaFieldType(primitive(scalar), encrypted: encrypted)
    }

    /// `record` with values converted to the declared types where CloudKit clients
    /// send another JSON shape: an integer for a DOUBLE or TIMESTAMP field.
    public func coerced(_ record: Record) -> Record {
        guard let type = types[record.recordType] else { return record }
        var copy = record
        var changed = false
        var fields = record.fields
        for (name, value) in fields {
            // Only integers are ever converted: other values are skipped before the
            // field is looked up (this runs on every save).
            guard Self.holdsInteger(value), let declared = type.fields[name]?.type, !declared.isEncrypted else {
                continue
            }
            let converted = Self.coerce(value, to: declared.primitive)
            if converted != value {
                fields[name] = converted
                changed = true
            }
        }
        if changed { copy.setStored(fields: fields, encryptedValues: record.encryptedValues) }
        return copy
    }

    /// Whether `value` is an integer or a list holding one: the values ``coerce(_:to:)``
    /// may change.
    private static func holdsInteger(_ value: FieldValue) -> Bool {
        switch value {
        case .int64: true
        case .list(let items): items.contains { if case .int64 = $0 { true } else { false } }
        default: false
        }
    }

    private static func coerce(_ value: FieldValue, to primitive: SchemaFieldType.Primitive) -> FieldValue {
        switch (value, primitive) {
        case (.int64(let number), .double): .double(Double(number))
        case (.int64(let number), .timestamp): .timestamp(Timestamp(millisecondsSince1970: number))
        case (.list(let items), _): .list(items.map { coerce($0, to: primitive) })
        default: value
        }
    }

    /// Throws unless `record` fits the production schema: every type and field
    /// declared, every value of its field's declared type. Development accepts
    /// anything (its schema grows just in time, and a field's type there is the
    /// first one saved, as a record of it — existing clients mix INT64 and DOUBLE,
    /// scalars and lists, and keep working).
    public func check(_ record: Record) throws {
        guard !growsJustInTime else { return }
        let typeName = record.recordType
        let declared = types[typeName]
        if declared == nil {
            throw CumulusError(
                .invalidArguments,
                "Cannot create new type \(typeName) in production schema; add it in development and deploy",
                recordID: record.recordID)
        }
        for (spaces, encrypted) in [(record.fields, false), (record.encryptedValues, true)] {
            for (name, value) in spaces {
                guard let field = declared?.fields[name] else {
                    throw CumulusError(
                        .invalidArguments,
                        "Cannot create or modify field '\(name)' in record type '\(typeName)' in production schema; add it in development and deploy",
                        recordID: record.recordID, field: name)
                }
                guard Self.accepts(field.type, value, encrypted: encrypted) else {
                    let sent = Self.inferredType(of: value, encrypted: encrypted).map(\.schemaText) ?? "an empty list"
                    throw CumulusError(
                        .invalidArguments,
                        "invalid attempt to set value type \(sent) for field '\(name)' for type '\(typeName)', defined to be: \(field.type.schemaText)",
                        recordID: record.recordID, field: name)
                }
            }
        }
    }

    /// Whether a value (in the encrypted key space or not) fits a declared type.
    public static func accepts(_ type: SchemaFieldType, _ value: FieldValue, encrypted: Bool) -> Bool {
        guard type.isEncrypted == encrypted else { return false }
        // Encrypted values are opaque to the server: only the key space is checked.
        if encrypted { return true }
        if case .list(let items) = value {
            return type.isList && items.allSatisfy { accepts(type.primitive, $0) }
        }
        return !type.isList && accepts(type.primitive, value)
    }

    private static func accepts(_ primitive: SchemaFieldType.Primitive, _ value: FieldValue) -> Bool {
        switch (primitive, value) {
        case (.string, .string), (.int64, .int64), (.double, .double), (.timestamp, .timestamp), (.bytes, .bytes),
            (.reference, .reference), (.location, .location), (.asset, .asset), (.number, .int64), (.number, .double):
            true
        default:
            false
        }
    }

    /// What just-in-time growth adds for `record` (development only): the type, if
    /// undeclared, with its system fields; then each undeclared field with a value
    /// whose type is known. Fields are sorted by name; nothing when all is declared.
    public func additions(for record: Record) -> (newType: RecordTypeSchema?, fields: [FieldSchema]) {
        guard growsJustInTime else { return (nil, []) }
        let declared = types[record.recordType]?.fields
        let newType = declared == nil
            ? RecordTypeSchema(
                name: record.recordType,
                fields: SystemField.allCases.filter { $0 != .etag }.map {
                    FieldSchema(name: $0.rawValue, type: $0.type, indexes: Self.justInTimeIndexes(for: $0))
                })
            : nil
        var fields: [FieldSchema] = []
        for (spaces, encrypted) in [(record.fields, false), (record.encryptedValues, true)] {
            for (name, value) in spaces where declared?[name] == nil {
                guard let type = Self.inferredType(of: value, encrypted: encrypted) else { continue }
                fields.append(FieldSchema(name: name, type: type, indexes: Self.justInTimeIndexes(for: type)))
            }
        }
        fields.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        return (newType, fields)
    }

    /// This schema with `fields` (and `type`, if new) added; declared fields are kept.
    public func extended(type name: String, with fields: [FieldSchema]) -> Schema {
        var copy = schema
        var type = copy.recordType(name) ?? RecordTypeSchema(name: name)
        for field in fields where type.field(field.name) == nil { type.fields.append(field) }
        copy.setRecordType(type.normalized())
        return copy
    }

    // MARK: - Queries

    /// Throws `invalidArguments` naming the field when `query` needs an index the
    /// schema does not keep: a filter on a field that is not QUERYABLE (a range on one
    /// that is not SORTABLE), a sort on one that is not SORTABLE, a token search on a
    /// type with no SEARCHABLE field, a query by record name (or with no filter at
    /// all) when `___recordID` is not QUERYABLE.
    public func checkQuery(_ query: Query) throws {
        let type = query.recordType
        if !growsJustInTime, types[type] == nil {
            throw CumulusError(.invalidArguments, "Did not find record type: \(type) (it is not in the production schema)")
        }
        func require(_ option: IndexOptions, _ key: QueryKey, _ word: String) throws {
            let options: IndexOptions
            let name: String
            switch key {
            case .allTokens:
                // In development an undeclared string field is searchable once saved.
                guard !growsJustInTime, searchableFields(of: type).isEmpty else { return }
                throw CumulusError(
                    .invalidArguments, "no field of record type '\(type)' is marked searchable; `self CONTAINS` needs one")
            case .field(let field):
                name = field
                // A declared field has its declared options whatever the value; an
                // undeclared one in development is queryable and sortable.
                options = indexes(ofField: field, in: type, isText: false)
            default:
                guard let system = SystemField(key) else { return }
                name = key == .recordName ? "recordName" : String(describing: key)
                options = indexes(of: system, in: type)
            }
            guard options.contains(option) else {
                throw CumulusError(.invalidArguments, "Field '\(name)' is not marked \(word)", field: name)
            }
        }
        if query.filters.isEmpty { try require(.queryable, .recordName, "queryable") }
        for filter in query.filters {
            switch filter.comparator {
            case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
                try require(.sortable, filter.key, "sortable")
            case .containsAllTokens, .containsAnyTokens:
                try require(.searchable, .allTokens, "searchable")
            default:
                try require(.queryable, filter.key, "queryable")
            }
        }
        for sort in query.sort { try require(.sortable, sort.key, "sortable") }
    }

    /// The declared fields of `type` marked SEARCHABLE (in development, undeclared
    /// string fields are searchable too).
    public func searchableFields(of type: String) -> Set<String> {
        Set((types[type]?.type.fields ?? []).filter { $0.indexes.contains(.searchable) }.map(\.name))
    }

    // MARK: - Security roles

    /// The roles `actor` holds for record-level checks, besides `_creator`:
    /// `_world` always, `_icloud` when signed in, and the custom roles assigned to them.
    public static func roles(of actor: String?, assigned: [String]) -> Set<String> {
        var roles: Set<String> = [SecurityRole.world]
        if let actor, !actor.isEmpty {
            roles.insert(SecurityRole.icloud)
            roles.formUnion(assigned)
        }
        return roles
    }

    /// The grants of `type`: declared, or CloudKit's defaults for an undeclared type.
    public func grants(of type: String) -> RecordTypeSchema {
        types[type]?.type ?? RecordTypeSchema(name: type)
    }

    /// Whether a holder of `roles` may do `permission` on a record of `type` whose
    /// creator is `creator` (`nil`: a record not yet created).
    public func allows(
        _ permission: Grant.Permissions, on type: String, roles: Set<String>, actor: String?, creator: String?
    ) -> Bool {
        let grants = grants(of: type)
        if roles.contains(where: { grants.grants(permission, to: $0) }) { return true }
        if let actor, !actor.isEmpty, let creator, creator == actor, grants.grants(permission, to: SecurityRole.creator) {
            return true
        }
        return false
    }
}

extension SystemField {
    /// The system field a query key names, if it names one.
    public init?(_ key: QueryKey) {
        switch key {
        case .recordName: self = .recordID
        case .creationDate: self = .createTime
        case .modificationDate: self = .modTime
        case .creatorUserRecordID: self = .createdBy
        case .lastModifiedUserRecordID: self = .modifiedBy
        case .parent: self = .parent
        case .share: self = .share
        case .field, .allTokens: return nil
        }
    }
}
