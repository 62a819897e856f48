import CumulusModel
import Foundation

/// Where a query's next page starts (SPEC §5): opaque to clients, authenticated,
/// and self-contained — it carries the query, the zone scope and the position
/// after the last record returned, so a continuation needs nothing else.
///
/// ```
/// u8 format (1) ‖ databaseID ‖ u8 zone flag [‖ zoneID] ‖ query (QueryCodec) ‖ blob position ‖ [16] HMAC-SHA256
/// ```
/// The HMAC (under the data directory's secret, truncated to 16 bytes) covers
/// everything before it: a forged or damaged cursor is `invalidArguments`.
public struct QueryCursor: OpaqueToken {
    /// The cursor's bytes.
    public let bytes: [UInt8]

    /// A cursor from its bytes (as a client sends it back).
    public init(bytes: [UInt8]) { self.bytes = bytes }



    static let format: UInt8 = 1

    struct Contents {
        var database: DatabaseID
        var zoneID: ZoneID?
        var query: Query
        var position: [UInt8]
    }

    static func make(_ contents: Contents, secret: [UInt8]) throws -> QueryCursor {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(format)
        writer.databaseID(contents.database)
        if let zone = contents.zoneID {
            writer.u8(1)
            writer.zoneID(zone)
        } else {
            writer.u8(0)
        }
        try QueryCodec.encode(contents.query, into: &writer)
        writer.blob(contents.position)
        return QueryCursor(bytes: TokenSeal.seal(writer.bytes, secret: secret))
    }

    func open(secret: [UInt8]) throws -> Contents {
        let refused = CumulusError(.invalidArguments, "the query cursor is damaged or was not issued by this server")
        guard let body = TokenSeal.open(bytes, secret: secret) else { throw refused }
        return try body.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "query cursor")
            guard try reader.u8() == Self.format else { throw refused }
            let database = try reader.databaseID()
            let zone = try reader.u8() == 1 ? try reader.zoneID() : nil
            let query = try QueryCodec.decode(from: &reader)
            let position = try reader.blob()
            try reader.expectEnd()
            return Contents(database: database, zoneID: zone, query: query, position: position)
        }
    }
}
