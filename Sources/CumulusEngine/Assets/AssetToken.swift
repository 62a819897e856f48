import CumulusModel
import Foundation

/// The sealed texts of the asset flow (issue 17), one layout for all three kinds:
///
/// ```
/// u8 format (1) ‖ u8 kind (4 upload URL, 5 receipt, 6 download URL) ‖ u64 expiry (ms)
///   ‖ databaseID ‖ the kind's body ‖ [16] HMAC-SHA256 (``TokenSeal``)
/// ```
///
/// as unpadded base64url, so it sits in a URL path unescaped. The kind byte sits where
/// a change token's and a notification token's do (kinds 1–3), so no token of one kind
/// passes for another although all are signed with the server secret. Followers share
/// the leader's secret, so any node opens any node's tokens. `Docs/LOG-FORMAT.md` §14.
enum AssetToken {
    static let format: UInt8 = 1

    /// Which of the three a token is.
    enum Kind: UInt8 {
        case upload = 4
        case receipt = 5
        case download = 6

        var name: String {
            switch self {
            case .upload: "upload URL"
            case .receipt: "receipt"
            case .download: "download URL"
            }
        }
    }

    /// `body` (after the common header) sealed as text.
    static func seal(
        _ kind: Kind, expires: Timestamp, database: DatabaseID, secret: [UInt8], body: (inout BinaryWriter) -> Void
    ) -> String {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(format)
        writer.u8(kind.rawValue)
        writer.u64(UInt64(max(0, expires.millisecondsSince1970)))
        writer.databaseID(database)
        body(&writer)
        return base64url(TokenSeal.seal(writer.bytes, secret: secret))
    }

    /// Opens `text` as a token of `kind` still valid at `now`, reading its body with
    /// `body` (given the database and expiry); `invalidArguments` saying why not (damaged, forged, another kind,
    /// expired), never more.
    static func open<T>(
        _ text: String, as kind: Kind, secret: [UInt8], now: Timestamp,
        body: (DatabaseID, Timestamp, inout BinaryReader) throws -> T
    ) throws -> T {
        func refused(_ why: String) -> CumulusError {
            CumulusError(.invalidArguments, "the asset \(kind.name) \(why)")
        }
        guard text.utf8.count <= 4_096, let bytes = bytes(base64url: text),
            let sealed = TokenSeal.open(bytes, secret: secret)
        else {
            throw refused("is damaged, forged, or was issued by another server")
        }
        do {
            return try sealed.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "asset \(kind.name)")
                guard try reader.u8() == format, try reader.u8() == kind.rawValue else {
                    throw refused("is not an asset \(kind.name)")
                }
                let expires = try reader.u64()
                guard UInt64(max(0, now.millisecondsSince1970)) <= expires else {
                    throw refused("has expired; ask for a new one")
                }
                let database = try reader.databaseID()
                let value = try body(database, Timestamp(millisecondsSince1970: Int64(clamping: expires)), &reader)
                try reader.expectEnd()
                return value
            }
        } catch let error as CumulusError where error.message.hasPrefix("the asset \(kind.name)") {
            throw error
        } catch {
            throw refused("is damaged")
        }
    }

    /// A checksum's 32 bytes from a token's body.
    static func checksum(_ reader: inout BinaryReader) throws -> AssetChecksum {
        guard let checksum = AssetChecksum(bytes: try reader.raw(AssetChecksum.byteCount)) else {
            throw reader.failure("checksum")
        }
        return checksum
    }

    /// Unpadded base64url (RFC 4648 §5).
    static func base64url(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// The bytes of canonical unpadded base64url, or `nil`: only the text ``base64url(_:)``
    /// makes of them is accepted, so one token has one spelling.
    static func bytes(base64url text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        guard let bytes = Data(base64Encoded: standard).map(Array.init), base64url(bytes) == text else { return nil }
        return bytes
    }
}
