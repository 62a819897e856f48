/// The stored bytes of a ``SubscriptionNotification`` (`Docs/LOG-FORMAT.md` §13).
/// Stored values are read back as untrusted: malformed bytes are an error, never a trap.
public enum NotificationCodec {
    /// The format byte.
    public static let formatVersion: UInt8 = 1

    /// The notification's bytes.
    public static func encode(_ notification: SubscriptionNotification) -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        writer.u8(formatVersion)
        writer.u64(notification.sequence)
        writer.string(notification.subscriptionID)
        writer.u8(notification.reason.rawValue)
        writer.databaseID(notification.database)
        SubscriptionCodec.writeOptionalZone(notification.zoneID, into: &writer)
        if let recordID = notification.recordID {
            writer.u8(1)
            writer.recordID(recordID)
        } else {
            writer.u8(0)
        }
        writer.u64(notification.commitSequence)
        writer.u64(notification.databaseSequence)
        return writer.bytes
    }

    /// Decodes what ``encode(_:)`` wrote.
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws -> SubscriptionNotification {
        var reader = BinaryReader(buffer, context: "notification")
        guard try reader.u8() == formatVersion else { throw reader.failure("unsupported notification format") }
        let sequence = try reader.u64()
        let subscriptionID = try reader.string()
        let rawReason = try reader.u8()
        guard let reason = SubscriptionNotification.Reason(rawValue: rawReason) else {
            throw reader.failure("unknown notification reason \(rawReason)")
        }
        let database = try reader.databaseID()
        let zoneID = try SubscriptionCodec.readOptionalZone(from: &reader)
        let recordID = try SubscriptionCodec.readFlag(from: &reader) ? try reader.recordID() : nil
        let notification = SubscriptionNotification(
            sequence: sequence, subscriptionID: subscriptionID, reason: reason, database: database, zoneID: zoneID,
            recordID: recordID, commitSequence: try reader.u64(), databaseSequence: try reader.u64())
        try reader.expectEnd()
        return notification
    }
}
