import CumulusModel
import CumulusViews
import Foundation

/// Where a user's notification stream was read up to: opaque to clients,
/// authenticated with the server secret and tied to the log it came from, like a
/// ``ChangeToken``. `Docs/LOG-FORMAT.md` §14 gives the bytes:
///
/// ```
/// u8 format (1) ‖ u8 kind (3 notification) ‖ [16] log ID ‖ u64 epoch ‖ [16] user key ‖ u64 sequence ‖ [16] HMAC-SHA256
/// ```
///
/// The kind byte sits where a change token's does, so one token can never be
/// passed off as the other even though both are signed with the same key.
public struct NotificationToken: OpaqueToken {
    /// The token's bytes.
    public let bytes: [UInt8]

    /// A token from its bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }



    static let format: UInt8 = 1
    static let kind: UInt8 = 3

    static func make(logID: [UInt8], epoch: UInt64, user: String, sequence: UInt64, secret: [UInt8]) -> NotificationToken {
        var writer = BinaryWriter(capacity: 72)
        writer.u8(format)
        writer.u8(kind)
        writer.raw(logID)
        writer.u64(epoch)
        writer.raw(SubscriptionIndex.userKey(user))
        writer.u64(sequence)
        return NotificationToken(bytes: TokenSeal.seal(writer.bytes, secret: secret))
    }

    /// The epoch the token was issued in and the sequence it stands at, or
    /// `changeTokenExpired` saying why it cannot be used (damaged, forged, another
    /// server's log, another user's stream).
    func open(secret: [UInt8], logID: [UInt8], user: String) throws -> (epoch: UInt64, sequence: UInt64) {
        func expired(_ why: String) -> CumulusError {
            CumulusError(.changeTokenExpired, "the notification token \(why); fetch again without a token")
        }
        guard let body = TokenSeal.open(bytes, secret: secret) else {
            throw expired("is damaged, forged, or was issued by another server")
        }
        do {
            return try body.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "notification token")
                guard try reader.u8() == Self.format, try reader.u8() == Self.kind else {
                    throw expired("is not a notification token")
                }
                guard try reader.raw(16) == logID else { throw expired("comes from another server's log") }
                let epoch = try reader.u64()
                guard try reader.raw(16) == SubscriptionIndex.userKey(user) else { throw expired("belongs to another user") }
                let sequence = try reader.u64()
                try reader.expectEnd()
                return (epoch, sequence)
            }
        } catch let error as CumulusError where error.code != .changeTokenExpired {
            throw expired("is damaged")
        }
    }
}
