import Crypto
import CumulusModel
import Foundation

/// What a `webcourierURL` grants (`Docs/HTTP-API.md`, "Notifications for web
/// clients"): reading one user's notifications
/// of one container environment through one push token, from where that token last
/// got to. CloudKit JS GETs the URL exactly as given, with no credentials of its own,
/// so the URL is the credential, as asset URLs are; any node sharing the server
/// secret opens it.
///
/// ```
/// u8 format (1) ‖ string user ‖ string container ‖ u8 environment ‖ string token
///   ‖ [32] session ‖ u64 start ‖ string origin
/// ```
/// sealed by ``TokenCipher`` (a token is the user's to read, not the network's) as
/// unpadded base64url. `session` is the SHA-256 of the web auth token it was made
/// with: the server answers only while that sign-in lasts, so the URL dies with the
/// user's sign-out or the token's revocation. `start` is the user's last notification
/// when the URL was made: a node that never served this token starts there, so a
/// failover can repeat notifications but never skip one. `origin` is the web origin
/// of the app that asked for it, when its API token allowed that origin (empty:
/// none): the one page that may read the URL's answers from a browser (CORS), since
/// the URL itself carries no API token to decide by.
public struct WebCourierTicket: Sendable, Hashable {
    /// The user whose notifications it reads.
    public var user: String
    /// The container.
    public var container: String
    /// The container's environment.
    public var environment: DatabaseID.Environment
    /// The push token (`apnsToken`) it belongs to: one read position per token.
    public var apnsToken: String
    /// SHA-256 of the web auth token that made it.
    public var session: [UInt8]
    /// The user's notification sequence when it was made.
    public var start: UInt64
    /// The app's web origin that may read the answers (empty: none).
    public var origin: String

    static let format: UInt8 = 1
    static let purpose = "cumulus webcourier v1"
    /// The longest push token a client may name (`tokens/register`).
    public static let maxTokenLength = 200

    /// A ticket.
    public init(
        user: String, container: String, environment: DatabaseID.Environment, apnsToken: String, session: [UInt8],
        start: UInt64, origin: String = ""
    ) {
        self.user = user
        self.container = container
        self.environment = environment
        self.apnsToken = apnsToken
        self.session = session
        self.start = start
        self.origin = origin
    }

    /// The ticket as the sealed text of a URL path segment.
    func sealed(secret: [UInt8]) throws -> String {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(Self.format)
        writer.string(user)
        writer.string(container)
        writer.u8(environment.rawValue)
        writer.string(apnsToken)
        writer.raw(session)
        writer.u64(start)
        writer.string(origin)
        let key = TokenCipher.key(secret: secret, purpose: Self.purpose)
        return AssetToken.base64url(try TokenCipher.seal(writer.bytes, key: key, binding: []))
    }

    /// The ticket `text` seals; `authenticationFailed`-worthy `invalidArguments` if it
    /// is damaged, forged or another server's.
    static func open(_ text: String, secret: [UInt8]) throws -> WebCourierTicket {
        let refused = CumulusError(.invalidArguments, "the webcourier URL is damaged, forged, or was issued by another server")
        guard text.utf8.count <= 2_048, let bytes = AssetToken.bytes(base64url: text),
            let body = TokenCipher.open(bytes, key: TokenCipher.key(secret: secret, purpose: purpose), binding: [])
        else { throw refused }
        do {
            return try body.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "webcourier URL")
                guard try reader.u8() == format else { throw refused }
                let user = try reader.string()
                let container = try reader.string()
                guard let environment = DatabaseID.Environment(rawValue: try reader.u8()) else { throw refused }
                let token = try reader.string()
                let session = Array(try reader.rawSlice(32))
                let start = try reader.u64()
                let origin = try reader.string()
                try reader.expectEnd()
                return WebCourierTicket(
                    user: user, container: container, environment: environment, apnsToken: token, session: session,
                    start: start, origin: origin)
            }
        } catch {
            throw refused
        }
    }

    /// The key of this token's read position (``WebCourierPositions``).
    var positionKey: [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.string(container)
        writer.u8(environment.rawValue)
        writer.string(user)
        writer.string(apnsToken)
        return Array(SHA256.hash(data: writer.bytes))
    }
}
