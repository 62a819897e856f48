/// The deterministic, versioned binary encoding of a ``Record`` (format 1).
///
/// Deterministic: the same record gives the same bytes — fields in ascending key
/// order (UTF-8 bytes), one canonical form for every value — so views rebuilt from
/// the log can be compared by hash. Versioned: the first byte is the format, so a
/// later version can still read what this one wrote. `changedKeys` is client state
/// and is not encoded. The byte layout is specified in `Docs/LOG-FORMAT.md` §2.
public enum RecordCodec {
    /// The format byte this version writes and reads.
    public static let formatVersion: UInt8 = 1

    // System-field presence bits.
    static let hasCreationDate: UInt8 = 1 << 0
    static let hasModificationDate: UInt8 = 1 << 1
    static let hasCreator: UInt8 = 1 << 2
    static let hasLastModifier: UInt8 = 1 << 3
    static let hasChangeTag: UInt8 = 1 << 4
    static let hasParent: UInt8 = 1 << 5
    static let hasShare: UInt8 = 1 << 6

    // Value tags.
    static let emptyListTag: UInt8 = 0x40
    static let listFlag: UInt8 = 0x40

    /// Encodes `record`. Throws `invalidArguments` for what has no canonical form:
    /// non-finite doubles, nested lists and lists mixing types.
    public static func encode(_ record: Record) throws -> [UInt8] {
        if let whole = record.wholeEncoding { return whole }
        var writer = BinaryWriter(capacity: 128 + (record.encoded?.bytes.count ?? record.fields.count * 24))
        try encode(record, into: &writer)
        return writer.bytes
    }

    /// Encodes `record` and keeps the bytes in it, its values' and its whole
    /// encoding's, so that encoding it again copies them: on a leader a record is
    /// measured by ``RecordValidator``, then written into the log's frame and into
    /// the view, and only the first of the three encodes it. A change to the record
    /// drops the whole encoding (its values' bytes stay while its values do).
    public static func encodeKeepingValues(_ record: inout Record) throws -> [UInt8] {
        let zone = record.recordID.zoneID
        if let whole = record.wholeEncoding { return whole }
        if let encoded = record.encoded, encoded.home == zone {
            let bytes = try encode(record)
            record.keepWholeEncoding(bytes)
            return bytes
        }
        if let damage = record.storedValuesError() { throw damage }
        var writer = BinaryWriter(capacity: 128 + record.fields.count * 24)
        writeHeader(record, into: &writer)
        let valuesStart = writer.count
        let fields = record.fields
        let encrypted = record.encryptedValues
        try writeFields(fields, home: zone, into: &writer)
        let encryptedOffset = writer.count - valuesStart
        try writeFields(encrypted, home: zone, into: &writer)
        let bytes = writer.bytes
        record.setStored(encoded: EncodedValues(
            encoded: Array(bytes[valuesStart...]), home: zone, encryptedOffset: encryptedOffset,
            fields: fields, encrypted: encrypted))
        record.keepWholeEncoding(bytes)
        return bytes
    }

    /// Appends the encoding of `record` to `writer`.
    public static func encode(_ record: Record, into writer: inout BinaryWriter) throws {
        if let whole = record.wholeEncoding {
            writer.raw(whole)
            return
        }
        // Values read unchecked are checked before anything is written, whichever way
        // they are written below: damaged stored values are never copied into the log
        // or a view, nor written as the empty sections a damaged read answers.
        if let damage = record.storedValuesError() { throw damage }
        writeHeader(record, into: &writer)
        if let encoded = record.encoded, encoded.home == record.recordID.zoneID {
            // Values never decoded since they were read, or already encoded once
            // (``encodeKeepingValues(_:)``), are written as they are held.
            writer.raw(encoded.bytes)
            return
        }
        let zone = record.recordID.zoneID
        try writeFields(record.fields, home: zone, into: &writer)
        try writeFields(record.encryptedValues, home: zone, into: &writer)
    }

    /// The identity and system fields: everything before the two value sections.
    private static func writeHeader(_ record: Record, into writer: inout BinaryWriter) {
        writer.u8(formatVersion)
        writer.string(record.recordType)
        writer.string(record.recordID.recordName)
        writer.string(record.recordID.zoneID.zoneName)
        writer.string(record.recordID.zoneID.ownerName)

        var mask: UInt8 = 0
        if record.creationDate != nil { mask |= hasCreationDate }
        if record.modificationDate != nil { mask |= hasModificationDate }
        if record.creatorUserRecordID != nil { mask |= hasCreator }
        if record.lastModifiedUserRecordID != nil { mask |= hasLastModifier }
        if record.recordChangeTag != nil { mask |= hasChangeTag }
        if record.parent != nil { mask |= hasParent }
        if record.share != nil { mask |= hasShare }
        writer.u8(mask)
        if let date = record.creationDate { writer.zigzag(date.millisecondsSince1970) }
        if let date = record.modificationDate { writer.zigzag(date.millisecondsSince1970) }
        if let user = record.creatorUserRecordID { writeRecordID(user, into: &writer) }
        if let user = record.lastModifiedUserRecordID { writeRecordID(user, into: &writer) }
        if let tag = record.recordChangeTag { writer.string(tag) }
        let zone = record.recordID.zoneID
        if let parent = record.parent { writeReference(parent, home: zone, into: &writer) }
        if let share = record.share { writeReference(share, home: zone, into: &writer) }
    }

    /// Decodes a record from untrusted bytes: returns it or throws
    /// `invalidArguments` naming the offset and the problem. Never traps.
    public static func decode(_ bytes: [UInt8]) throws -> Record {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Decodes a record from untrusted bytes in place (an LMDB value, say), without
    /// copying them first.
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws -> Record {
        var reader = BinaryReader(buffer, context: "record")
        let record = try decode(from: &reader)
        try reader.expectEnd()
        return record
    }

    /// Decodes a stored record's identity and system fields now and keeps its values
    /// in (a copy of) their bytes, decoded when read (``Record``): what reads that
    /// return records to a caller use, so values nobody reads are never built. The
    /// values are checked as ``decode(_:)`` would check them, so the same bytes throw.
    public static func decodeLazily(_ buffer: UnsafeRawBufferPointer) throws -> Record {
        var hints = RecordDecodeHints()
        return try decodeLazily(buffer, hints: &hints)
    }

    /// ``decodeLazily(_:)`` taking strings from `hints` where the stored bytes match
    /// them: for a run of reads (a fetch, a query page) that keeps one `hints`.
    public static func decodeLazily(_ buffer: UnsafeRawBufferPointer, hints: inout RecordDecodeHints) throws -> Record {
        var reader = BinaryReader(buffer, context: "record")
        let record = try decodeLazily(from: &reader, hints: &hints)
        try reader.expectEnd()
        return record
    }

    /// Decodes a stored record's identity and system fields now and keeps its values
    /// in (a copy of) their bytes **unchecked**: each read checks the values it
    /// decodes, and a value nobody reads is never checked (``EncodedValues``). For
    /// records a read hands back (fetch, query, change feeds), whose values are mostly
    /// never read or read once to be written out; a caller that hands the values on
    /// asks ``Record/storedValuesError()`` first. The header is checked as
    /// ``decode(_:)`` checks it.
    public static func decodeForReading(_ buffer: UnsafeRawBufferPointer, hints: inout RecordDecodeHints) throws
        -> Record
    {
        var reader = BinaryReader(buffer, context: "record")
        var record = try decodeHeader(from: &reader, hints: &hints)
        // The two value sections are the rest of the stored bytes.
        let sections = try reader.rawSlice(reader.remaining)
        record.setStored(encoded: EncodedValues(reading: sections, home: record.recordID.zoneID))
        record.clearChangedKeys()
        return record
    }

    /// ``decodeLazily(_:)`` for one record inside larger bytes (a commit's event),
    /// leaving `reader` just past the record.
    public static func decodeLazily(from reader: inout BinaryReader) throws -> Record {
        var hints = RecordDecodeHints()
        return try decodeLazily(from: &reader, hints: &hints)
    }

    static func decodeLazily(from reader: inout BinaryReader, hints: inout RecordDecodeHints) throws -> Record {
        var record = try decodeHeader(from: &reader, hints: &hints)
        record.setStored(encoded: try EncodedValues(checking: &reader, home: record.recordID.zoneID))
        record.clearChangedKeys()
        return record
    }

    /// Decodes one record from `reader`, leaving it just past the record.
    public static func decode(from reader: inout BinaryReader) throws -> Record {
        var record = try decodeHeader(from: &reader)
        let zone = record.recordID.zoneID
        let fields = try readFields(home: zone, from: &reader)
        let encrypted = try readFields(home: zone, from: &reader)
        record.setStored(fields: fields, encryptedValues: encrypted)
        record.clearChangedKeys()
        return record
    }

    /// Decodes the part before the fields (identity and system fields), leaving
    /// `reader` at the fields' count.
    static func decodeHeader(from reader: inout BinaryReader) throws -> Record {
        var hints = RecordDecodeHints()
        return try decodeHeader(from: &reader, hints: &hints)
    }

    /// ``decodeHeader(from:)`` taking strings from `hints` where the bytes match, and
    /// leaving this record's type and users in them for the next decode.
    static func decodeHeader(from reader: inout BinaryReader, hints: inout RecordDecodeHints) throws -> Record {
        let version = try reader.u8()
        guard version == formatVersion else {
            throw reader.failure("unsupported record format \(version) (this build reads \(formatVersion))")
        }
        let recordType = try reader.string(reusing: hints.recordType)
        let recordID = try reader.recordID(reusing: hints.recordID)
        let zone = recordID.zoneID
        hints.recordType = recordType

        let mask = try reader.u8()
        guard mask & 0x80 == 0 else { throw reader.failure("unknown system-field bits \(mask)") }
        let created = try mask & hasCreationDate != 0 ? Timestamp(millisecondsSince1970: reader.zigzag()) : nil
        let modified = try mask & hasModificationDate != 0 ? Timestamp(millisecondsSince1970: reader.zigzag()) : nil
        var creator: RecordID?
        if mask & hasCreator != 0 {
            creator = try reader.recordID(reusing: hints.user)
            hints.user = creator
        }
        var modifier: RecordID?
        if mask & hasLastModifier != 0 {
            modifier = try reader.recordID(reusing: hints.user)
            hints.user = modifier
        }
        let changeTag = try mask & hasChangeTag != 0 ? reader.string() : nil
        let parent = try mask & hasParent != 0 ? readReference(home: zone, from: &reader) : nil
        let share = try mask & hasShare != 0 ? readReference(home: zone, from: &reader) : nil
        return Record(
            storedType: recordType, recordID: recordID, creationDate: created, modificationDate: modified,
            creator: creator, modifier: modifier, changeTag: changeTag, parent: parent, share: share)
    }

    // MARK: - Pieces shared with the system-fields archive

    static func writeRecordID(_ id: RecordID, into writer: inout BinaryWriter) {
        writer.recordID(id)
    }

    static func readRecordID(from reader: inout BinaryReader) throws -> RecordID {
        try reader.recordID()
    }

    // A reference in the record's own zone (the only kind a valid record holds)
    // is written without its zone; the explicit form is allowed only for others.
    static func writeReference(_ reference: Reference, home: ZoneID, into writer: inout BinaryWriter) {
        writer.string(reference.recordID.recordName)
        if reference.recordID.zoneID == home {
            writer.u8(0)
        } else {
            writer.u8(1)
            writer.string(reference.recordID.zoneID.zoneName)
            writer.string(reference.recordID.zoneID.ownerName)
        }
        writer.u8(reference.action.rawValue)
    }

    static func readReference(home: ZoneID, from reader: inout BinaryReader) throws -> Reference {
        let name = try reader.string()
        let zone: ZoneID
        switch try reader.u8() {
        case 0:
            zone = home
        case 1:
            zone = ZoneID(zoneName: try reader.string(), ownerName: try reader.string())
            guard zone != home else { throw reader.failure("reference spells out the record's own zone") }
        case let mode:
            throw reader.failure("unknown reference zone mode \(mode)")
        }
        let rawAction = try reader.u8()
        guard let action = Reference.Action(rawValue: rawAction) else {
            throw reader.failure("unknown reference action \(rawAction)")
        }
        return Reference(recordID: RecordID(recordName: name, zoneID: zone), action: action)
    }

    // MARK: - Fields and values

    static func writeFields(_ fields: [String: FieldValue], home: ZoneID, into writer: inout BinaryWriter) throws {
        writer.length(fields.count)
        // Sorting the (key, value) pairs saves a dictionary lookup per key afterwards.
        let entries = fields.sorted { UTF8Order.precedes($0.key, $1.key) }
        for (key, value) in entries {
            writer.string(key)
            do {
                try writeValue(value, home: home, into: &writer)
            } catch let error as CumulusError {
                throw error.at(nil, field: key)
            }
        }
    }

    static func readFields(home: ZoneID, from reader: inout BinaryReader) throws -> [String: FieldValue] {
        // Each entry is at least a 1-byte key length, 1-byte tag and 1 payload byte.
        let count = try reader.length(minimumItemSize: 3)
        var fields = [String: FieldValue](minimumCapacity: count)
        // The previous key's bytes in the reader's buffer: order is checked on the
        // raw bytes, without copying each key into an array.
        var previous: UnsafeRawBufferPointer?
        for _ in 0..<count {
            let (key, keyBytes) = try reader.stringAndBytes()
            if let previous, UTF8Order.compare(previous, keyBytes) >= 0 {
                throw reader.failure("field keys not in strictly ascending order at '\(key)'")
            }
            previous = keyBytes
            let value = try readValue(home: home, from: &reader)
            // Distinct byte strings can still be equal Swift strings (canonical
            // equivalence); such a pair would not survive a re-encode.
            guard fields.updateValue(value, forKey: key) == nil else {
                throw reader.failure("field key '\(key)' appears twice")
            }
        }
        return fields
    }

    static func writeValue(_ value: FieldValue, home: ZoneID, into writer: inout BinaryWriter) throws {
        guard case .list(let items) = value else {
            guard let type = value.scalarType else { return }
            writer.u8(type.rawValue)
            try writeScalar(value, home: home, into: &writer)
            return
        }
        guard let first = items.first else {
            writer.u8(emptyListTag)
            return
        }
        guard let type = first.scalarType else {
            throw CumulusError(.invalidArguments, "lists cannot contain lists")
        }
        writer.u8(listFlag | type.rawValue)
        writer.length(items.count)
        for item in items {
            guard item.scalarType == type else {
                throw CumulusError(
                    .invalidArguments,
                    "a list must hold one type; found \(item.scalarType?.wireName ?? "LIST") among \(type.wireName)")
            }
            try writeScalar(item, home: home, into: &writer)
        }
    }

    static func writeScalar(_ value: FieldValue, home: ZoneID, into writer: inout BinaryWriter) throws {
        switch value {
        case .string(let text):
            writer.string(text)
        case .int64(let number):
            writer.zigzag(number)
        case .double(let number):
            guard number.isFinite else {
                throw CumulusError(.invalidArguments, "doubles must be finite; got \(number)")
            }
            writer.double(number)
        case .timestamp(let time):
            writer.zigzag(time.millisecondsSince1970)
        case .bytes(let data):
            writer.blob(data)
        case .reference(let reference):
            writeReference(reference, home: home, into: &writer)
        case .location(let location):
            for part in location.doubleComponents where !part.value.isFinite {
                throw CumulusError(.invalidArguments, "location \(part.name) must be finite; got \(part.value)")
            }
            writer.double(location.latitude)
            writer.double(location.longitude)
            var mask: UInt8 = 0
            if location.altitude != nil { mask |= 1 << 0 }
            if location.horizontalAccuracy != nil { mask |= 1 << 1 }
            if location.verticalAccuracy != nil { mask |= 1 << 2 }
            if location.course != nil { mask |= 1 << 3 }
            if location.speed != nil { mask |= 1 << 4 }
            if location.timestamp != nil { mask |= 1 << 5 }
            writer.u8(mask)
            for part in [location.altitude, location.horizontalAccuracy, location.verticalAccuracy,
                         location.course, location.speed] {
                if let part { writer.double(part) }
            }
            if let time = location.timestamp { writer.zigzag(time.millisecondsSince1970) }
        case .asset(let asset):
            writer.string(asset.fileChecksum)
            writer.zigzag(asset.size)
            var mask: UInt8 = 0
            if asset.referenceChecksum != nil { mask |= 1 << 0 }
            if asset.wrappingKey != nil { mask |= 1 << 1 }
            if asset.receipt != nil { mask |= 1 << 2 }
            writer.u8(mask)
            for part in [asset.referenceChecksum, asset.wrappingKey, asset.receipt] {
                if let part { writer.string(part) }
            }
        case .list:
            throw CumulusError(.invalidArguments, "lists cannot contain lists")
        }
    }

    static func readValue(home: ZoneID, from reader: inout BinaryReader) throws -> FieldValue {
        let tag = try reader.u8()
        if tag == emptyListTag { return .list([]) }
        if tag & listFlag != 0 {
            guard let type = FieldValue.ValueType(rawValue: tag & ~listFlag) else {
                throw reader.failure("unknown list element type \(tag & ~listFlag)")
            }
            let count = try reader.length()
            guard count > 0 else { throw reader.failure("empty list written with an element type") }
            var items: [FieldValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try readScalar(type, home: home, from: &reader)) }
            return .list(items)
        }
        guard let type = FieldValue.ValueType(rawValue: tag) else {
            throw reader.failure("unknown value type \(tag)")
        }
        return try readScalar(type, home: home, from: &reader)
    }

    static func readFiniteDouble(_ what: String, from reader: inout BinaryReader) throws -> Double {
        let value = try reader.double()
        guard value.isFinite else { throw reader.failure("\(what) is not finite") }
        return value
    }

    static func readScalar(_ type: FieldValue.ValueType, home: ZoneID, from reader: inout BinaryReader) throws
        -> FieldValue
    {
        switch type {
        case .string:
            return .string(try reader.string())
        case .int64:
            return .int64(try reader.zigzag())
        case .double:
            return .double(try readFiniteDouble("double", from: &reader))
        case .timestamp:
            return .timestamp(Timestamp(millisecondsSince1970: try reader.zigzag()))
        case .bytes:
            return .bytes(try reader.blob())
        case .reference:
            return .reference(try readReference(home: home, from: &reader))
        case .location:
            var location = Location(
                latitude: try readFiniteDouble("latitude", from: &reader),
                longitude: try readFiniteDouble("longitude", from: &reader))
            let mask = try reader.u8()
            guard mask & 0xC0 == 0 else { throw reader.failure("unknown location bits \(mask)") }
            if mask & (1 << 0) != 0 { location.altitude = try readFiniteDouble("altitude", from: &reader) }
            if mask & (1 << 1) != 0 {
                location.horizontalAccuracy = try readFiniteDouble("horizontalAccuracy", from: &reader)
            }
            if mask & (1 << 2) != 0 {
                location.verticalAccuracy = try readFiniteDouble("verticalAccuracy", from: &reader)
            }
            if mask & (1 << 3) != 0 { location.course = try readFiniteDouble("course", from: &reader) }
            if mask & (1 << 4) != 0 { location.speed = try readFiniteDouble("speed", from: &reader) }
            if mask & (1 << 5) != 0 { location.timestamp = Timestamp(millisecondsSince1970: try reader.zigzag()) }
            return .location(location)
        case .asset:
            var asset = Asset(fileChecksum: try reader.string(), size: try reader.zigzag())
            let mask = try reader.u8()
            guard mask & 0xF8 == 0 else { throw reader.failure("unknown asset bits \(mask)") }
            if mask & (1 << 0) != 0 { asset.referenceChecksum = try reader.string() }
            if mask & (1 << 1) != 0 { asset.wrappingKey = try reader.string() }
            if mask & (1 << 2) != 0 { asset.receipt = try reader.string() }
            return .asset(asset)
        }
    }
}
