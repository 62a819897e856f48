import CumulusModel

/// What an upload URL grants (`Docs/HTTP-API.md`, "Assets"): storing one file for one field of
/// one record type, for one user in one database, until it expires. The URL is the
/// only credential the upload itself needs, as in CloudKit.
public struct AssetUploadTicket: Sendable, Equatable {
    /// The database the record will be saved in.
    public var database: DatabaseID
    /// Who asked for the URL; the receipt is theirs alone.
    public var user: String
    /// The zone the record will be saved in.
    public var zoneID: ZoneID
    /// The record's name, if the client gave one.
    public var recordName: String?
    /// The record's type.
    public var recordType: String
    /// The field the asset goes in.
    public var fieldName: String
    /// When the URL stops working.
    public var expires: Timestamp

    /// How long an upload URL works: CloudKit's 15 minutes (`Docs/HTTP-API.md`, "Assets").
    public static let lifetime: Duration = .seconds(15 * 60)

    /// A ticket.
    public init(
        database: DatabaseID, user: String, zoneID: ZoneID, recordName: String?, recordType: String, fieldName: String,
        expires: Timestamp
    ) {
        self.database = database
        self.user = user
        self.zoneID = zoneID
        self.recordName = recordName
        self.recordType = recordType
        self.fieldName = fieldName
        self.expires = expires
    }

    /// The ticket as the sealed text of an upload URL.
    func sealed(secret: [UInt8]) -> String {
        AssetToken.seal(.upload, expires: expires, database: database, secret: secret) { writer in
            writer.string(user)
            writer.zoneID(zoneID)
            writer.u8(recordName == nil ? 0 : 1)
            if let recordName { writer.string(recordName) }
            writer.string(recordType)
            writer.string(fieldName)
        }
    }

    /// The ticket an upload URL's text seals; `invalidArguments` if it is damaged,
    /// forged or expired at `now`.
    static func open(_ text: String, secret: [UInt8], now: Timestamp) throws -> AssetUploadTicket {
        try AssetToken.open(text, as: .upload, secret: secret, now: now) { database, expires, reader in
            let user = try reader.string()
            let zoneID = try reader.zoneID()
            let recordName = try reader.u8() == 1 ? try reader.string() : nil
            return AssetUploadTicket(
                database: database, user: user, zoneID: zoneID, recordName: recordName, recordType: try reader.string(),
                fieldName: try reader.string(), expires: expires)
        }
    }
}
