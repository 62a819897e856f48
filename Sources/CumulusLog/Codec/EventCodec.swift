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
        // 16–31: reserved for sharing events.
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
        }
    }

    /// Reads one event; throws `invalidArguments` on anything malformed or non-canonical.
    public static func decode(from reader: inout BinaryReader) throws -> Event {
        let rawTag = try reader.u8()
        guard let tag = Tag(rawValue: rawTag) else { throw reader.failure("unknown event type \(rawTag)") }
        switch tag {
        case .recordSaved:
            let database = try reader.databaseID()
            let record = try RecordCodec.decode(from: &reader)
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
        }
    }
}
