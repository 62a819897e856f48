/// A stored record (``RecordCodec``'s bytes) read in place: the header is parsed
/// once, and fields are decoded only when asked for, the rest skipped by their
/// lengths.
///
/// Lifetime: a reader borrows `buffer` and must not outlive it — for a view entry,
/// the LMDB transaction it was read in (``RecordReader`` is `~Escapable` in spirit;
/// keep it inside the closure that received the bytes).
///
/// What it checks: every read is bounds-checked, so forged bytes give an error,
/// never a trap; it does not re-check what only a full decode needs (key order,
/// canonical forms) — ``RecordCodec/decode(_:)`` remains the validator of untrusted
/// bytes, and this reader serves the views the engine wrote itself.
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
        if mask & RecordCodec.hasCreator != 0 { _ = try reader.recordID() }
        if mask & RecordCodec.hasLastModifier != 0 { _ = try reader.recordID() }
        let tagStart = reader.offset
        if mask & RecordCodec.hasChangeTag != 0 { _ = try reader.rawSlice(reader.length()) }
        changeTagRange = tagStart..<reader.offset
        if mask & RecordCodec.hasParent != 0 { try Self.skipReference(&reader) }
        if mask & RecordCodec.hasShare != 0 { try Self.skipReference(&reader) }
        fieldsOffset = reader.offset
    }

    /// The record with its system fields and only the fields whose key `keep`
    /// accepts, and the encrypted values whose key `keepEncrypted` accepts (none by
    /// default: no index holds them); the others are skipped without being decoded.
    public func record(
        keepingFields keep: (String) -> Bool, keepingEncrypted keepEncrypted: (String) -> Bool = { _ in false }
    ) throws -> Record {
        var reader = BinaryReader(buffer, context: "record")
        var record = try RecordCodec.decodeHeader(from: &reader)
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

    // MARK: - Skipping

    static func skipReference(_ reader: inout BinaryReader) throws {
        _ = try reader.rawSlice(reader.length())
        switch try reader.u8() {
        case 0: break
        case 1:
            _ = try reader.rawSlice(reader.length())
            _ = try reader.rawSlice(reader.length())
        case let mode: throw reader.failure("unknown reference zone mode \(mode)")
        }
        _ = try reader.u8()
    }

    /// Moves `reader` past one value (tag included) without building it.
    static func skipValue(_ reader: inout BinaryReader) throws {
        let tag = try reader.u8()
        if tag == RecordCodec.emptyListTag { return }
        if tag & RecordCodec.listFlag != 0 {
            guard let type = FieldValue.ValueType(rawValue: tag & ~RecordCodec.listFlag) else {
                throw reader.failure("unknown list element type \(tag & ~RecordCodec.listFlag)")
            }
            for _ in 0..<(try reader.length()) { try skipScalar(type, &reader) }
            return
        }
        guard let type = FieldValue.ValueType(rawValue: tag) else { throw reader.failure("unknown value type \(tag)") }
        try skipScalar(type, &reader)
    }

    static func skipScalar(_ type: FieldValue.ValueType, _ reader: inout BinaryReader) throws {
        switch type {
        case .string, .bytes:
            _ = try reader.rawSlice(reader.length())
        case .int64, .timestamp:
            _ = try reader.varint()
        case .double:
            _ = try reader.rawSlice(8)
        case .reference:
            try skipReference(&reader)
        case .location:
            _ = try reader.rawSlice(16)
            let mask = try reader.u8()
            guard mask & 0xC0 == 0 else { throw reader.failure("unknown location bits \(mask)") }
            _ = try reader.rawSlice(8 * (mask & 0x1F).nonzeroBitCount)
            if mask & (1 << 5) != 0 { _ = try reader.varint() }
        case .asset:
            _ = try reader.rawSlice(reader.length())
            _ = try reader.varint()
            let mask = try reader.u8()
            guard mask & 0xF8 == 0 else { throw reader.failure("unknown asset bits \(mask)") }
            for _ in 0..<mask.nonzeroBitCount { _ = try reader.rawSlice(reader.length()) }
        }
    }
}
