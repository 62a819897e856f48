import CumulusModel
import Foundation

/// A change token (`Docs/DATA-MODEL.md`, "Change feeds"): opaque to clients,
/// authenticated, and tied to the log
/// it came from. `Docs/LOG-FORMAT.md` §11 gives the bytes:
///
/// ```
/// u8 format (1) ‖ u8 kind (1 zone, 2 database) ‖ [16] log ID ‖ u64 epoch ‖ databaseID
/// ‖ (zone tokens) zoneID ‖ u64 zone incarnation ‖ u64 feed position ‖ u32 offset ‖ [16] HMAC-SHA256
/// ```
///
/// The position is the last feed entry consumed (zone or database sequence) and, for
/// an entry a page stopped inside, how many of its changes were consumed.
public struct ChangeToken: OpaqueToken {
    /// The token's bytes.
    public let bytes: [UInt8]

    /// A token from its bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }



    enum Kind: UInt8 {
        case zone = 1
        case database = 2
    }

    struct Contents: Equatable {
        var kind: Kind
        var logID: [UInt8]
        var epoch: UInt64
        var database: DatabaseID
        var zoneID: ZoneID?
        var incarnation: UInt64
        var position: UInt64
        var offset: UInt32
    }

    static let format: UInt8 = 1

    static func make(_ contents: Contents, secret: [UInt8]) -> ChangeToken {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(format)
        writer.u8(contents.kind.rawValue)
        writer.raw(contents.logID)
        writer.u64(contents.epoch)
        writer.databaseID(contents.database)
        if let zone = contents.zoneID { writer.zoneID(zone) }
        writer.u64(contents.incarnation)
        writer.u64(contents.position)
        writer.u32(contents.offset)
        return ChangeToken(bytes: TokenSeal.seal(writer.bytes, secret: secret))
    }

    /// The token's contents, or `changeTokenExpired` saying why it cannot be used.
    /// `kind`: the kind it must be (`nil`: either).
    func open(secret: [UInt8], expecting expected: Kind?) throws -> Contents {
        func expired(_ why: String) -> CumulusError {
            CumulusError(.changeTokenExpired, "the change token \(why); fetch again without a token")
        }
        guard let body = TokenSeal.open(bytes, secret: secret) else {
            throw expired("is damaged, forged, or was issued by another server")
        }
        do {
            return try body.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "change token")
                guard try reader.u8() == Self.format else { throw expired("has an unknown format") }
                guard let kind = Kind(rawValue: try reader.u8()) else { throw expired("is damaged") }
                if let expected, kind != expected {
                    throw expired(expected == .zone ? "is a database token, not a zone token" : "is a zone token, not a database token")
                }
                let logID = try reader.raw(16)
                let epoch = try reader.u64()
                let database = try reader.databaseID()
                let zone = kind == .zone ? try reader.zoneID() : nil
                let contents = Contents(
                    kind: kind, logID: logID, epoch: epoch, database: database, zoneID: zone,
                    incarnation: try reader.u64(), position: try reader.u64(), offset: try reader.u32())
                try reader.expectEnd()
                return contents
            }
        } catch let error as CumulusError where error.code != .changeTokenExpired {
            throw expired("is damaged")
        }
    }
}
