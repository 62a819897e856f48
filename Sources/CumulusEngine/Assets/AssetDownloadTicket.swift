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

    /// How long a download URL works. The URL is a bearer credential that outlives
    /// nothing but itself: a reader who loses access to the record (a share ended, a
    /// READ grant withdrawn) keeps a URL it already holds until then, so it is short
    /// (issue 40). Clients fetch a record's assets right after the record.
    public static let lifetime: Duration = .seconds(5 * 60)

    /// ``lifetime`` in whole seconds (what `Cache-Control: max-age` says).
    public static var lifetimeSeconds: Int64 { lifetime.components.seconds }

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
