/// The versioned, deterministic bytes of a ``Subscription`` — the `definition` of a
/// `subscriptionSaved` event. Layout in `Docs/LOG-FORMAT.md` §12.
///
/// Definitions come back from the log and, on followers, from the network, so
/// decoding treats them as hostile: every malformed input is a `CumulusError`, and
/// only canonical forms decode (flags are 0 or 1, no unknown bits, no trailing
/// bytes), so what decodes re-encodes to the same bytes.
public enum SubscriptionCodec {
    /// The format byte.
    public static let formatVersion: UInt8 = 1

    enum KindTag: UInt8 {
        case query = 1
        case zone = 2
        case database = 3
    }

    /// The definition bytes; throws only for queries with no canonical form (NaN).
    public static func encode(_ subscription: Subscription) throws -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(formatVersion)
        writer.string(subscription.subscriptionID)
        writer.string(subscription.owner)
        switch subscription.kind {
        case .query(let query, let zoneID, let firesOn, let firesOnce):
            writer.u8(KindTag.query.rawValue)
            try QueryCodec.encode(query, into: &writer)
            writeOptionalZone(zoneID, into: &writer)
            writer.u8(firesOn.rawValue)
            writer.u8(firesOnce ? 1 : 0)
        case .zone(let zoneID, let recordType):
            writer.u8(KindTag.zone.rawValue)
            writer.zoneID(zoneID)
            writeOptionalString(recordType, into: &writer)
        case .database(let recordType):
            writer.u8(KindTag.database.rawValue)
            writeOptionalString(recordType, into: &writer)
        }
        return writer.bytes
    }

    /// Decodes definition bytes written by ``encode(_:)``.
    public static func decode(_ bytes: [UInt8]) throws -> Subscription {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Decodes definition bytes in place (an LMDB value, say).
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws -> Subscription {
        var reader = BinaryReader(buffer, context: "subscription definition")
        guard try reader.u8() == formatVersion else { throw reader.failure("unsupported subscription format") }
        let subscriptionID = try reader.string()
        let owner = try reader.string()
        let rawKind = try reader.u8()
        let kind: Subscription.Kind
        switch KindTag(rawValue: rawKind) {
        case .query:
            let start = reader.offset
            let query = try QueryCodec.decode(from: &reader)
            // QueryCodec reads some flag bytes leniently (any non-zero is true); a
            // definition must be canonical, so its query must re-encode to its bytes.
            var canonical = BinaryWriter(capacity: reader.offset - start)
            try QueryCodec.encode(query, into: &canonical)
            guard canonical.bytes.elementsEqual(UnsafeRawBufferPointer(rebasing: buffer[start..<reader.offset])) else {
                throw reader.failure("the query is not in canonical form")
            }
            let zoneID = try readOptionalZone(from: &reader)
            let rawFiresOn = try reader.u8()
            guard rawFiresOn & ~FiresOn.all.rawValue == 0 else { throw reader.failure("unknown firesOn bits \(rawFiresOn)") }
            let firesOnce = try readFlag(from: &reader)
            kind = .query(query, zoneID: zoneID, firesOn: FiresOn(rawValue: rawFiresOn), firesOnce: firesOnce)
        case .zone:
            let zoneID = try reader.zoneID()
            kind = .zone(zoneID, recordType: try readOptionalString(from: &reader))
        case .database:
            kind = .database(recordType: try readOptionalString(from: &reader))
        case nil:
            throw reader.failure("unknown subscription kind \(rawKind)")
        }
        try reader.expectEnd()
        return Subscription(subscriptionID: subscriptionID, owner: owner, kind: kind)
    }

    static func writeOptionalZone(_ zoneID: ZoneID?, into writer: inout BinaryWriter) {
        guard let zoneID else { return writer.u8(0) }
        writer.u8(1)
        writer.zoneID(zoneID)
    }

    static func writeOptionalString(_ text: String?, into writer: inout BinaryWriter) {
        guard let text else { return writer.u8(0) }
        writer.u8(1)
        writer.string(text)
    }

    static func readFlag(from reader: inout BinaryReader) throws -> Bool {
        switch try reader.u8() {
        case 0: return false
        case 1: return true
        case let other: throw reader.failure("flag byte \(other) is neither 0 nor 1")
        }
    }

    static func readOptionalZone(from reader: inout BinaryReader) throws -> ZoneID? {
        try readFlag(from: &reader) ? try reader.zoneID() : nil
    }

    static func readOptionalString(from reader: inout BinaryReader) throws -> String? {
        try readFlag(from: &reader) ? try reader.string() : nil
    }
}
