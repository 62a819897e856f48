import CumulusModel

/// What a download URL grants: reading one stored file until it expires. Handed out
/// only inside records the reader may read (``Database/downloadTicket(for:as:)``), so
/// the URL is the credential, as CloudKit's are; any node sharing the server secret
/// opens it, and serves the file from its own store.
public struct AssetDownloadTicket: Sendable, Equatable {
    /// The file.
    public var checksum: AssetChecksum
    /// The database of the record it was found in.
    public var database: DatabaseID
    /// When the URL stops working.
    public var expires: Timestamp

    /// How long a download URL works.
    public static let lifetime: Duration = .seconds(60 * 60)

    /// A ticket.
    public init(checksum: AssetChecksum, database: DatabaseID, expires: Timestamp) {
        self.checksum = checksum
        self.database = database
        self.expires = expires
    }

    /// The ticket as the sealed text of a download URL.
    func sealed(secret: [UInt8]) -> String {
        AssetToken.seal(.download, expires: expires, database: database, secret: secret) { writer in
            writer.raw(checksum.bytes)
        }
    }

    /// The ticket a download URL's text seals; `invalidArguments` if it is damaged,
    /// forged or expired at `now`.
    static func open(_ text: String, secret: [UInt8], now: Timestamp) throws -> AssetDownloadTicket {
        try AssetToken.open(text, as: .download, secret: secret, now: now) { database, expires, reader in
            let checksum = try AssetToken.checksum(&reader)
            return AssetDownloadTicket(checksum: checksum, database: database, expires: expires)
        }
    }
}
