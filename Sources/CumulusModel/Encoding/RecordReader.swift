/// A stored record (``RecordCodec``'s bytes) read in place: the header is parsed
/// once, and fields are decoded only when asked for, the rest skipped by their
/// lengths.
///
/// Lifetime: a reader borrows `buffer` and must not outlive it — for a view entry,
/// the LMDB transaction it was read in (``RecordReader`` is `~Escapable` in spirit;
/// keep it inside the closure that received the bytes).
///
/// What it checks: every read is bounds-checked, so forged bytes give an error,
/// never a trap. Skipping a value checks only its structure; with `checking:` (the
/// walk ``EncodedValues`` makes) it makes every check ``RecordCodec/decode(_:)`` makes
/// on a value. ``RecordCodec/decode(_:)`` remains the validator of untrusted bytes, and
/// the partial read here serves the views the engine wrote itself.
public struct RecordReader {
    /// The bytes read.
    public let buffer: UnsafeRawBufferPointer
    /// The record's type.
    public let recordType: String
    /// The record's ID.
    public let recordID: RecordID
    /// Where the change tag's length prefix starts (or would be inserted), and where
    /// what follows it starts.
    let changeTagRange: Range<Int>
    /// Where the fields' count starts.
    let fieldsOffset: Int
    /// The system-field presence bits, and where they are.
    let mask: UInt8
    let maskOffset: Int
    /// Where the creator's record ID starts, if the record has one.
    let creatorOffset: Int?

    /// Parses the header of `buffer`, a record's stored bytes.
    public init(_ buffer: UnsafeRawBufferPointer) throws {
        self.buffer = buffer
        var reader = BinaryReader(buffer, context: "record")
        let version = try reader.u8()
        guard version == RecordCodec.formatVersion else {
            throw reader.failure("unsupported record format \(version) (this build reads \(RecordCodec.formatVersion))")
        }
        recordType = try reader.string()
        let name = try reader.string()
        let zone = try reader.zoneID()
        recordID = RecordID(recordName: name, zoneID: zone)
        maskOffset = reader.offset
        mask = try reader.u8()
        guard mask & 0x80 == 0 else { throw reader.failure("unknown system-field bits \(mask)") }
        if mask & RecordCodec.hasCreationDate != 0 { _ = try reader.varint() }
        if mask & RecordCodec.hasModificationDate != 0 { _ = try reader.varint() }
        if mask & RecordCodec.hasCreator != 0 {
            creatorOffset = reader.offset
            _ = try reader.recordID()
        } else {
            creatorOffset = nil
        }
        if mask & RecordCodec.hasLastModifier != 0 { _ = try reader.recordID() }
        let tagStart = reader.offset
        if mask & RecordCodec.hasChangeTag != 0 { _ = try reader.rawSlice(reader.length()) }
        changeTagRange = tagStart..<reader.offset
        if mask & RecordCodec.hasParent != 0 { try Self.skipReference(&reader) }
        if mask & RecordCodec.hasShare != 0 { try Self.skipReference(&reader) }
        fieldsOffset = reader.offset
    }

    /// The type of the record `buffer` holds, read without the rest of its header:
    /// what a cascade's planning and its deletes ask of each victim, where parsing the
    /// whole header (its name and zone as strings, its system fields) was a twentieth
    /// of the writer's time.
    public static func recordType(of buffer: UnsafeRawBufferPointer) throws -> String {
        var reader = BinaryReader(buffer, context: "record")
        let version = try reader.u8()
        guard version == RecordCodec.formatVersion else {
            throw reader.failure("unsupported record format \(version) (this build reads \(RecordCodec.formatVersion))")
        }
        return try reader.string()
    }

    /// The record name of the user who created the record, or `nil` if it has no
    /// creator: read only when asked, so the header parse stays allocation-free.
    public func creatorName() throws -> String? {
        guard let creatorOffset else { return nil }
        var reader = BinaryReader(buffer, context: "record")
        try reader.seek(to: creatorOffset)
        return try reader.recordID().recordName
    }

    /// The record with its system fields and only the fields whose key `keep`
    /// accepts, and the encrypted values whose key `keepEncrypted` accepts (none by
    /// default: no index holds them); the others are skipped without being decoded.
    public func record(
        keepingFields keep: (String) -> Bool, keepingEncrypted keepEncrypted: (String) -> Bool = { _ in false }
    ) throws -> Record {
        var reader = BinaryReader(buffer, context: "record")
        // The type and ID were read by init: hinted, the header decode reuses them
        // instead of building them a second time.
        var hints = RecordDecodeHints(expecting: recordID)
        hints.recordType = recordType
        var record = try RecordCodec.decodeHeader(from: &reader, hints: &hints)
        let count = try reader.length(minimumItemSize: 3)
        var fields: [String: FieldValue] = [:]
        for _ in 0..<count {
            let key = try reader.string()
            if keep(key) {
                fields[key] = try RecordCodec.readValue(home: recordID.zoneID, from: &reader)
            } else {
                try Self.skipValue(&reader)
            }
        }
        // Skipped values are still walked, so the whole record is bounds-checked as a
        // full decode would.
        var encrypted: [String: FieldValue] = [:]
        for _ in 0..<(try reader.length(minimumItemSize: 3)) {
            let key = try reader.string()
            if keepEncrypted(key) {
                encrypted[key] = try RecordCodec.readValue(home: recordID.zoneID, from: &reader)
            } else {
                try Self.skipValue(&reader)
            }
        }
        try reader.expectEnd()
        record.setStored(fields: fields, encryptedValues: encrypted)
        record.clearChangedKeys()
        return record
    }

    /// The same bytes with the change tag replaced by `tag`: what a tag bump stores,
    /// without decoding and re-encoding the record (the result is exactly what
    /// ``RecordCodec/encode(_:)`` gives for the record with the new tag).
    public func replacingChangeTag(with tag: String) -> [UInt8] {
        var writer = BinaryWriter(capacity: buffer.count + tag.utf8.count + 2)
        writer.raw(UnsafeRawBufferPointer(rebasing: buffer[..<maskOffset]))
        // The presence bit lives in the mask byte, before the system fields.
        writer.u8(mask | RecordCodec.hasChangeTag)
        writer.raw(UnsafeRawBufferPointer(rebasing: buffer[(maskOffset + 1)..<changeTagRange.lowerBound]))
        writer.string(tag)
        writer.raw(UnsafeRawBufferPointer(rebasing: buffer[changeTagRange.upperBound...]))
        return writer.bytes
    }

    /// The value tag (``RecordCodec``'s: a scalar's type, or a list's) of the user
    /// field `key` in the stored record `buffer`, or `nil` when it has no such field:
    /// whether a record holds a list where a query sorts, asked of its bytes without
    /// building the record or any string of its header.
    public static func fieldTag(_ key: String, in buffer: UnsafeRawBufferPointer) throws -> UInt8? {
        var reader = BinaryReader(buffer, context: "record")
        guard try seekField(key, &reader) else { return nil }
        return try reader.u8()
    }

    /// The value of the user field `key` in the stored record `buffer` (whose zone is
    /// `home`), or `nil` when it has none: one value decoded, the rest skipped. What
    /// a query sorting candidates by one field reads of each.
    public static func fieldValue(_ key: String, in buffer: UnsafeRawBufferPointer, home: ZoneID) throws -> FieldValue? {
        var reader = BinaryReader(buffer, context: "record")
        guard try seekField(key, &reader) else { return nil }
        return try RecordCodec.readValue(home: home, from: &reader)
    }

    /// The change tag's bytes in the stored record `buffer`, or `nil` when it has
    /// none: which version a change feed's record is, without building its header.
    public static func changeTag(in buffer: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var reader = BinaryReader(buffer, context: "record")
        let mask = try skipToChangeTag(&reader)
        return mask & RecordCodec.hasChangeTag != 0 ? try reader.rawSlice(reader.length()) : nil
    }

    /// Moves `reader` (at the start of a stored record) past the header up to the
    /// change tag (or where it would be), returning the system-field bits.
    private static func skipToChangeTag(_ reader: inout BinaryReader) throws -> UInt8 {
        guard try reader.u8() == RecordCodec.formatVersion else { throw reader.failure("unsupported record format") }
        for _ in 0..<4 { _ = try reader.rawSlice(reader.length()) }  // type, name, zone's name and owner
        let mask = try reader.u8()
        guard mask & 0x80 == 0 else { throw reader.failure("unknown system-field bits \(mask)") }
        if mask & RecordCodec.hasCreationDate != 0 { _ = try reader.varint() }
        if mask & RecordCodec.hasModificationDate != 0 { _ = try reader.varint() }
        for bit in [RecordCodec.hasCreator, RecordCodec.hasLastModifier] where mask & bit != 0 {
            for _ in 0..<3 { _ = try reader.rawSlice(reader.length()) }
        }
        return mask
    }

    /// Moves `reader` (at the start of a stored record) past the header to its first
    /// user field's key, returning how many user fields it has (stored in ascending
    /// UTF-8 order of their keys, each a key and a value).
    static func seekFields(_ reader: inout BinaryReader) throws -> Int {
        let mask = try skipToChangeTag(&reader)
        if mask & RecordCodec.hasChangeTag != 0 { _ = try reader.rawSlice(reader.length()) }
        if mask & RecordCodec.hasParent != 0 { try skipReference(&reader) }
        if mask & RecordCodec.hasShare != 0 { try skipReference(&reader) }
        return try reader.length(minimumItemSize: 3)
    }

    /// Moves `reader` (at the start of a stored record) to the value of the user
    /// field `key` and returns `true`, or returns `false` when the record has none.
    private static func seekField(_ key: String, _ reader: inout BinaryReader) throws -> Bool {
        let count = try seekFields(&reader)
        var wanted = key
        return try wanted.withUTF8 { wantedBytes -> Bool in
            let target = UnsafeRawBufferPointer(wantedBytes)
            for _ in 0..<count {
                let order = UTF8Order.compare(try reader.rawSlice(reader.length()), target)
                if order == 0 { return true }
                // Keys are stored in ascending order: past it, the record has none.
                if order > 0 { return false }
                try skipValue(&reader)
            }
            return false
        }
    }

    // MARK: - Skipping

    /// Moves `reader` past one reference. With `home`, makes every check
    /// ``RecordCodec`` makes reading it (UTF-8, zone mode, no spelled-out home zone,
    /// a known action).
    static func skipReference(_ reader: inout BinaryReader, checking home: ZoneID? = nil) throws {
        try skipString(&reader, checking: home != nil)
        switch try reader.u8() {
        case 0: break
        case 1:
            if let home {
                let zone = ZoneID(zoneName: try reader.string(), ownerName: try reader.string())
                guard zone != home else { throw reader.failure("reference spells out the record's own zone") }
            } else {
                _ = try reader.rawSlice(reader.length())
                _ = try reader.rawSlice(reader.length())
            }
        case let mode: throw reader.failure("unknown reference zone mode \(mode)")
        }
        let action = try reader.u8()
        if home != nil, Reference.Action(rawValue: action) == nil {
            throw reader.failure("unknown reference action \(action)")
        }
    }

    /// Moves `reader` past one value (tag included) without building it. With `home`
    /// (the record's zone), it also makes every check ``RecordCodec``'s decode makes,
    /// so bytes that pass decode without error: what ``EncodedValues`` relies on.
    static func skipValue(_ reader: inout BinaryReader, checking home: ZoneID? = nil) throws {
        let tag = try reader.u8()
        if tag == RecordCodec.emptyListTag { return }
        if tag & RecordCodec.listFlag != 0 {
            guard let type = FieldValue.ValueType(rawValue: tag & ~RecordCodec.listFlag) else {
                throw reader.failure("unknown list element type \(tag & ~RecordCodec.listFlag)")
            }
            let count = try reader.length()
            if home != nil, count == 0 { throw reader.failure("empty list written with an element type") }
            for _ in 0..<count { try skipScalar(type, &reader, checking: home) }
            return
        }
        guard let type = FieldValue.ValueType(rawValue: tag) else { throw reader.failure("unknown value type \(tag)") }
        try skipScalar(type, &reader, checking: home)
    }

    static func skipScalar(_ type: FieldValue.ValueType, _ reader: inout BinaryReader, checking home: ZoneID? = nil)
        throws
    {
        let checking = home != nil
        switch type {
        case .string:
            try skipString(&reader, checking: checking)
        case .bytes:
            _ = try reader.rawSlice(reader.length())
        case .int64, .timestamp:
            _ = try reader.varint()
        case .double:
            try skipDouble(&reader, checking: checking)
        case .reference:
            try skipReference(&reader, checking: home)
        case .location:
            try skipDouble(&reader, checking: checking)
            try skipDouble(&reader, checking: checking)
            let mask = try reader.u8()
            guard mask & 0xC0 == 0 else { throw reader.failure("unknown location bits \(mask)") }
            for _ in 0..<(mask & 0x1F).nonzeroBitCount { try skipDouble(&reader, checking: checking) }
            if mask & (1 << 5) != 0 { _ = try reader.varint() }
        case .asset:
            try skipString(&reader, checking: checking)
            _ = try reader.varint()
            let mask = try reader.u8()
            guard mask & 0xF8 == 0 else { throw reader.failure("unknown asset bits \(mask)") }
            for _ in 0..<mask.nonzeroBitCount { try skipString(&reader, checking: checking) }
        }
    }

    /// Past one length-prefixed string, returning its bytes; checking, they must be
    /// valid UTF-8 (checked without building a `String` when ASCII, as nearly all are).
    @discardableResult
    static func skipString(_ reader: inout BinaryReader, checking: Bool) throws -> UnsafeRawBufferPointer {
        let bytes = try reader.rawSlice(reader.length())
        if checking, !BinaryReader.isValidUTF8(bytes) { throw reader.notUTF8() }
        return bytes
    }

    /// Past one double; checking, it must be finite and not −0.0, as decode requires.
    private static func skipDouble(_ reader: inout BinaryReader, checking: Bool) throws {
        if checking {
            _ = try RecordCodec.readFiniteDouble("double", from: &reader)
        } else {
            _ = try reader.rawSlice(8)
        }
    }
}
