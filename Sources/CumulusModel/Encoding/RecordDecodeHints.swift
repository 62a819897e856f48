/// Strings a run of record decodes is likely to meet again, so a decode can return
/// the string it already has instead of building an equal one: the record's ID when
/// the caller knows which record it asked for (a fetch, a query's candidate), and
/// the type and users of the record decoded before (a page is mostly one type, saved
/// by a few users). A decode checks the stored bytes against each hint and takes it
/// only when they are exactly its UTF-8, so a wrong hint costs a comparison, never
/// a wrong value.
///
/// Record names and user IDs are usually longer than the 15 bytes Swift keeps
/// inline, so each reused one is an allocation and a UTF-8 check saved.
public struct RecordDecodeHints: Sendable {
    /// The ID the caller expects the next record to have.
    public var recordID: RecordID?
    /// The type of the record decoded last.
    var recordType: String?
    /// The last user seen as creator or last modifier.
    var user: RecordID?

    /// Hints expecting `recordID` (or nothing) and remembering nothing yet.
    public init(expecting recordID: RecordID? = nil) {
        self.recordID = recordID
    }
}

extension BinaryReader {
    /// A length-prefixed string as ``string()`` reads it, but `known` itself when the
    /// bytes are exactly its UTF-8 (a valid string, so nothing more to check).
    mutating func string(reusing known: String?) throws -> String {
        let bytes = try rawSlice(length())
        if var known {
            let same = known.withUTF8 { UTF8Order.compare(UnsafeRawBufferPointer($0), bytes) == 0 }
            if same { return known }
        }
        guard let text = Self.decodeUTF8(bytes) else { throw failure("invalid UTF-8 in string") }
        return text
    }

    /// A zone ID as ``zoneID()`` reads it, reusing `known`'s strings where they match.
    mutating func zoneID(reusing known: ZoneID?) throws -> ZoneID {
        let name = try string(reusing: known?.zoneName)
        return ZoneID(zoneName: name, ownerName: try string(reusing: known?.ownerName))
    }

    /// A record ID as ``recordID()`` reads it, reusing `known`'s strings where they match.
    mutating func recordID(reusing known: RecordID?) throws -> RecordID {
        let name = try string(reusing: known?.recordName)
        return RecordID(recordName: name, zoneID: try zoneID(reusing: known?.zoneID))
    }
}
