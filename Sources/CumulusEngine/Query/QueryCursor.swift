import CumulusModel
import Crypto
import Foundation

/// Where a query's next page starts (`Docs/DATA-MODEL.md`, "Queries"): opaque to clients, sealed, and
/// self-contained — it carries the query, the zone scope and the position after
/// the last record the page read, so a continuation needs nothing else.
///
/// ```
/// u8 format (2) ‖ TokenCipher( u8 zone flag [‖ zoneID] ‖ query (QueryCodec) ‖ blob position )
/// binding: u8 format ‖ databaseID ‖ u8 actor flag [‖ actor]
/// ```
/// Encrypted, not only signed (issue 40): a page passes over records its caller
/// may not read, and may end on one, so the position can name a hidden record and
/// its sort value. The binding ties a cursor to the user, container, environment
/// and database it was issued for: anyone else's cursor, a forged one or a damaged
/// one is `invalidArguments`, alike.
public struct QueryCursor: OpaqueToken {
    /// The cursor's bytes.
    public let bytes: [UInt8]

    /// A cursor from its bytes (as a client sends it back).
    public init(bytes: [UInt8]) { self.bytes = bytes }

    static let format: UInt8 = 2
    /// The HKDF purpose of the cursor key: no other token shares it.
    static let purpose = "cumulus query cursor v2"

    struct Contents {
        var database: DatabaseID
        var zoneID: ZoneID?
        var query: Query
        var position: [UInt8]
    }

    static func make(_ contents: Contents, secret: [UInt8], actor: String?) throws -> QueryCursor {
        try sealed(body(contents), secret: secret, database: contents.database, actor: actor)
    }

    /// The plaintext of `contents` (what the cipher hides).
    static func body(_ contents: Contents) throws -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        if let zone = contents.zoneID {
            writer.u8(1)
            writer.zoneID(zone)
        } else {
            writer.u8(0)
        }
        try QueryCodec.encode(contents.query, into: &writer)
        writer.blob(contents.position)
        return writer.bytes
    }

    /// A cursor of `body`, for `actor` in `database`.
    static func sealed(_ body: [UInt8], secret: [UInt8], database: DatabaseID, actor: String?) throws -> QueryCursor {
        let sealed = try TokenCipher.seal(body, key: key(secret), binding: binding(database: database, actor: actor))
        return QueryCursor(bytes: [format] + sealed)
    }

    /// The contents, if this cursor was issued by this server to `actor` for `database`.
    func open(secret: [UInt8], database: DatabaseID, actor: String?) throws -> Contents {
        let refused = CumulusError(
            .invalidArguments, "the query cursor is damaged, or was not issued by this server to you for this database")
        guard bytes.first == Self.format,
            let body = TokenCipher.open(
                Array(bytes.dropFirst()), key: Self.key(secret), binding: Self.binding(database: database, actor: actor))
        else { throw refused }
        return try body.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "query cursor")
            let zone = try reader.u8() == 1 ? try reader.zoneID() : nil
            let query = try QueryCodec.decode(from: &reader)
            let position = try reader.blob()
            try reader.expectEnd()
            return Contents(database: database, zoneID: zone, query: query, position: position)
        }
    }

    private static func key(_ secret: [UInt8]) -> SymmetricKey { TokenCipher.key(secret: secret, purpose: purpose) }

    private static func binding(database: DatabaseID, actor: String?) -> [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.u8(format)
        writer.databaseID(database)
        if let actor {
            writer.u8(1)
            writer.string(actor)
        } else {
            writer.u8(0)
        }
        return writer.bytes
    }
}
