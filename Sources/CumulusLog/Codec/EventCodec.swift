import CumulusModel

/// The deterministic binary form of an ``Event``: a tag byte, then the case's
/// fields in declaration order. `Docs/LOG-FORMAT.md` §4.
public enum EventCodec {
    enum Tag: UInt8 {
        case recordSaved = 1
        case recordDeleted = 2
        case changeTagBumped = 3
        case zoneSaved = 4
        case zoneDeleted = 5
        case subscriptionSaved = 6
        case subscriptionDeleted = 7
        case dictionaryInstalled = 8
        case schemaChanged = 9
        case schemaExtended = 10
        case rolesAssigned = 11
        case epochBegan = 12
        // 13–15: free. 16–31: sharing.
        case shareSaved = 16
        case shareDeleted = 17
    }

    /// Appends `event` to `writer`; throws only for a record with no canonical form.
    public static func encode(_ event: Event, into writer: inout BinaryWriter) throws {
        switch event {
        case .recordSaved(let database, let record, let changedKeys):
            writer.u8(Tag.recordSaved.rawValue)
            writer.databaseID(database)
            try RecordCodec.encode(record, into: &writer)
            let keys = UTF8Order.sortedUnique(changedKeys)
            writer.length(keys.count)
            for key in keys { writer.string(key) }
        case .recordDeleted(let database, let recordID, let recordType, let cause):
            writer.u8(Tag.recordDeleted.rawValue)
            writer.databaseID(database)
            writer.recordID(recordID)
            writer.string(recordType)
            switch cause {
            case .direct:
                writer.u8(0)
            case .cascade(let owner):
                writer.u8(1)
                writer.recordID(owner)
            case .zoneDeleted:
                writer.u8(2)
            }
        case .changeTagBumped(let database, let recordID, let changeTag, let source):
            writer.u8(Tag.changeTagBumped.rawValue)
            writer.databaseID(database)
            writer.recordID(recordID)
            writer.string(changeTag)
            writer.recordID(source)
        case .zoneSaved(let database, let zone):
            writer.u8(Tag.zoneSaved.rawValue)
            writer.databaseID(database)
            writer.zoneID(zone.zoneID)
            writer.varint(UInt64(zone.capabilities.rawValue))
        case .zoneDeleted(let database, let zoneID):
            writer.u8(Tag.zoneDeleted.rawValue)
            writer.databaseID(database)
            writer.zoneID(zoneID)
        case .subscriptionSaved(let database, let subscriptionID, let definition):
            writer.u8(Tag.subscriptionSaved.rawValue)
            writer.databaseID(database)
            writer.string(subscriptionID)
            writer.blob(definition)
        case .subscriptionDeleted(let database, let subscriptionID):
            writer.u8(Tag.subscriptionDeleted.rawValue)
            writer.databaseID(database)
            writer.string(subscriptionID)
        case .dictionaryInstalled(let id, let bytes):
            writer.u8(Tag.dictionaryInstalled.rawValue)
            writer.u32(id)
            writer.blob(bytes)
        case .schemaChanged(let schema, let text, let reason):
            writer.u8(Tag.schemaChanged.rawValue)
            writer.schemaID(schema)
            writer.u8(reason.rawValue)
            writer.string(text)
        case .schemaExtended(let schema, let recordType, let fields):
            writer.u8(Tag.schemaExtended.rawValue)
            writer.schemaID(schema)
            writer.string(recordType)
            writer.length(fields.count)
            for field in fields { writer.fieldSchema(field) }
        case .rolesAssigned(let schema, let user, let roles):
            writer.u8(Tag.rolesAssigned.rawValue)
            writer.schemaID(schema)
            writer.string(user)
            let sorted = UTF8Order.sortedUnique(roles)
            writer.length(sorted.count)
            for role in sorted { writer.string(role) }
        case .epochBegan(let epoch):
            writer.u8(Tag.epochBegan.rawValue)
            writer.u64(epoch)
        case .shareSaved(let database, let share):
            writer.u8(Tag.shareSaved.rawValue)
            writer.databaseID(database)
            ShareCodec.encode(share, into: &writer)
        case .shareDeleted(let database, let zoneID, let recordName):
            writer.u8(Tag.shareDeleted.rawValue)
            writer.databaseID(database)
            writer.zoneID(zoneID)
            writer.string(recordName)
        }
    }

    /// Reads one event; throws `invalidArguments` on anything malformed or non-canonical.
    public static func decode(from reader: inout BinaryReader) throws -> Event {
        let rawTag = try reader.u8()
        guard let tag = Tag(rawValue: rawTag) else { throw reader.failure("unknown event type \(rawTag)") }
        switch tag {
        case .recordSaved:
            let database = try reader.databaseID()
            let record = try RecordCodec.decodeLazily(from: &reader)
            let count = try reader.length()
            var keys: [String] = []
            keys.reserveCapacity(count)
            // Order is checked on the raw bytes in the buffer (no copy per key).
            var previous: UnsafeRawBufferPointer?
            for _ in 0..<count {
                let (key, bytes) = try reader.stringAndBytes()
                if let previous, UTF8Order.compare(previous, bytes) >= 0 {
                    throw reader.failure("changed keys not in strictly ascending order")
                }
                previous = bytes
                keys.append(key)
            }
            return .recordSaved(database: database, record: record, changedKeys: keys)
        case .recordDeleted:
            let database = try reader.databaseID()
            let recordID = try reader.recordID()
            let recordType = try reader.string()
            let cause: DeleteCause
            switch try reader.u8() {
            case 0: cause = .direct
            case 1: cause = .cascade(owner: try reader.recordID())
            case 2: cause = .zoneDeleted
            case let other: throw reader.failure("unknown delete cause \(other)")
            }
            return .recordDeleted(database: database, recordID: recordID, recordType: recordType, cause: cause)
        case .changeTagBumped:
            let database = try reader.databaseID()
            let recordID = try reader.recordID()
            let tag = try reader.string()
            return .changeTagBumped(
                database: database, recordID: recordID, changeTag: tag, source: try reader.recordID())
        case .zoneSaved:
            let database = try reader.databaseID()
            let zoneID = try reader.zoneID()
            let raw = try reader.varint()
            guard raw <= UInt64(UInt32.max) else { throw reader.failure("zone capabilities out of range") }
            return .zoneSaved(
                database: database, zone: Zone(zoneID: zoneID, capabilities: ZoneCapabilities(rawValue: UInt32(raw))))
        case .zoneDeleted:
            let database = try reader.databaseID()
            return .zoneDeleted(database: database, zoneID: try reader.zoneID())
        case .subscriptionSaved:
            let database = try reader.databaseID()
            let id = try reader.string()
            return .subscriptionSaved(database: database, subscriptionID: id, definition: try reader.blob())
        case .subscriptionDeleted:
            let database = try reader.databaseID()
            return .subscriptionDeleted(database: database, subscriptionID: try reader.string())
        case .dictionaryInstalled:
            let id = try reader.u32()
            return .dictionaryInstalled(id: id, bytes: try reader.blob())
        case .schemaChanged:
            let schema = try reader.schemaID()
            let raw = try reader.u8()
            guard let reason = SchemaChangeReason(rawValue: raw) else { throw reader.failure("unknown schema change \(raw)") }
            return .schemaChanged(schema: schema, text: try reader.string(), reason: reason)
        case .schemaExtended:
            let schema = try reader.schemaID()
            let recordType = try reader.string()
            var fields: [FieldSchema] = []
            for _ in 0..<(try reader.length(minimumItemSize: 5)) { fields.append(try reader.fieldSchema()) }
            return .schemaExtended(schema: schema, recordType: recordType, fields: fields)
        case .rolesAssigned:
            let schema = try reader.schemaID()
            let user = try reader.string()
            var roles: [String] = []
            for _ in 0..<(try reader.length(minimumItemSize: 1)) { roles.append(try reader.string()) }
            guard UTF8Order.sortedUnique(roles) == roles else { throw reader.failure("roles not sorted and unique") }
            return .rolesAssigned(schema: schema, user: user, roles: roles)
        case .epochBegan:
            return .epochBegan(epoch: try reader.u64())
        case .shareSaved:
            let database = try reader.databaseID()
            return .shareSaved(database: database, share: try ShareCodec.decode(from: &reader))
        case .shareDeleted:
            let database = try reader.databaseID()
            let zoneID = try reader.zoneID()
            return .shareDeleted(database: database, zoneID: zoneID, recordName: try reader.string())
        }
    }
}

/// Primitive type codes of ``FieldSchema`` in events (`Docs/LOG-FORMAT.md` §4): fixed
/// numbers, so a reordering of the Swift enum cannot change what a log means.
private let primitiveCodes: [(SchemaFieldType.Primitive, UInt8)] = [
    (.asset, 1), (.bytes, 2), (.double, 3), (.int64, 4), (.location, 5), (.number, 6), (.reference, 7),
    (.string, 8), (.timestamp, 9),
]

extension BinaryWriter {
    /// container string ‖ u8 environment.
    mutating func schemaID(_ id: SchemaID) {
        string(id.container)
        u8(id.environment.rawValue)
    }

    /// name ‖ u8 primitive ‖ u8 flags (1 encrypted, 2 list) ‖ u8 preferred (0 none) ‖ u8 index options.
    mutating func fieldSchema(_ field: FieldSchema) {
        func code(_ primitive: SchemaFieldType.Primitive) -> UInt8 {
            primitiveCodes.first { $0.0 == primitive }?.1 ?? 0
        }
        string(field.name)
        u8(code(field.type.primitive))
        u8((field.type.isEncrypted ? 1 : 0) | (field.type.isList ? 2 : 0))
        u8(field.type.preferred.map(code) ?? 0)
        u8(field.indexes.rawValue)
    }
}

extension BinaryReader {
    mutating func schemaID() throws -> SchemaID {
        let container = try string()
        let raw = try u8()
        guard let environment = DatabaseID.Environment(rawValue: raw) else { throw failure("unknown environment \(raw)") }
        return SchemaID(container: container, environment: environment)
    }

    mutating func fieldSchema() throws -> FieldSchema {
        let name = try string()
        func primitive(_ raw: UInt8) throws -> SchemaFieldType.Primitive {
            guard let found = primitiveCodes.first(where: { $0.1 == raw })?.0 else { throw failure("unknown field type \(raw)") }
            return found
        }
        let base = try primitive(try u8())
        let flags = try u8()
        guard flags & ~3 == 0 else { throw failure("unknown field type flags \(flags)") }
        let preferredRaw = try u8()
        let preferred = preferredRaw == 0 ? nil : try primitive(preferredRaw)
        let options = try u8()
        guard options & ~IndexOptions.all.rawValue == 0 else { throw failure("unknown index options \(options)") }
        return FieldSchema(
            name: name,
            type: SchemaFieldType(base, encrypted: flags & 1 != 0, preferred: preferred, list: flags & 2 != 0),
            indexes: IndexOptions(rawValue: options))
    }
}
