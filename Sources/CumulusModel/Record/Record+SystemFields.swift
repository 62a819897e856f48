/// `encodeSystemFields` (`Docs/DATA-MODEL.md`, "Records"): a compact, versioned
/// archive of a record's system fields that a client keeps and later turns back into an empty shell
/// carrying the right change tag, so it can save changes without refetching.
extension Record {
    /// The archive's format byte; distinct from ``RecordCodec/formatVersion`` so a
    /// record encoding is never mistaken for an archive, or the reverse.
    public static let systemFieldsArchiveVersion: UInt8 = 0x81

    /// Archives the record's ID, type, dates, users and change tag (not its fields,
    /// parent or share). Layout: `Docs/LOG-FORMAT.md` §3.
    public func encodeSystemFields() -> [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.u8(Self.systemFieldsArchiveVersion)
        writer.string(recordType)
        RecordCodec.writeRecordID(recordID, into: &writer)
        var mask: UInt8 = 0
        if creationDate != nil { mask |= RecordCodec.hasCreationDate }
        if modificationDate != nil { mask |= RecordCodec.hasModificationDate }
        if creatorUserRecordID != nil { mask |= RecordCodec.hasCreator }
        if lastModifiedUserRecordID != nil { mask |= RecordCodec.hasLastModifier }
        if recordChangeTag != nil { mask |= RecordCodec.hasChangeTag }
        writer.u8(mask)
        if let creationDate { writer.zigzag(creationDate.millisecondsSince1970) }
        if let modificationDate { writer.zigzag(modificationDate.millisecondsSince1970) }
        if let creatorUserRecordID { RecordCodec.writeRecordID(creatorUserRecordID, into: &writer) }
        if let lastModifiedUserRecordID { RecordCodec.writeRecordID(lastModifiedUserRecordID, into: &writer) }
        if let recordChangeTag { writer.string(recordChangeTag) }
        return writer.bytes
    }

    /// Rebuilds an empty record shell from ``encodeSystemFields()``'s archive: no
    /// fields, no changed keys, the archived system fields and change tag.
    /// Malformed or foreign bytes throw `invalidArguments`.
    public init(systemFieldsArchive bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "system-fields archive")
            let version = try reader.u8()
            guard version == Self.systemFieldsArchiveVersion else {
                throw reader.failure("not a system-fields archive (format byte \(version))")
            }
            let type = try reader.string()
            var shell = Record(recordType: type, recordID: try RecordCodec.readRecordID(from: &reader))
            let mask = try reader.u8()
            guard mask & ~UInt8(0x1F) == 0 else { throw reader.failure("unknown system-field bits \(mask)") }
            if mask & RecordCodec.hasCreationDate != 0 {
                shell.creationDate = Timestamp(millisecondsSince1970: try reader.zigzag())
            }
            if mask & RecordCodec.hasModificationDate != 0 {
                shell.modificationDate = Timestamp(millisecondsSince1970: try reader.zigzag())
            }
            if mask & RecordCodec.hasCreator != 0 { shell.creatorUserRecordID = try RecordCodec.readRecordID(from: &reader) }
            if mask & RecordCodec.hasLastModifier != 0 {
                shell.lastModifiedUserRecordID = try RecordCodec.readRecordID(from: &reader)
            }
            if mask & RecordCodec.hasChangeTag != 0 { shell.recordChangeTag = try reader.string() }
            try reader.expectEnd()
            return shell
        }
    }
}
