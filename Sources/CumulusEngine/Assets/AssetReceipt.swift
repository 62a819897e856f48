import CumulusModel

/// The server's word that a user stored a file (`Docs/HTTP-API.md`, "Assets"): the `receipt`
/// of an upload's answer, which the record save must carry. Sealed, so a client
/// cannot refer to bytes it never uploaded, and bound to the user and database, so
/// one user's receipt does not let another claim the file.
///
/// Receipts are one-time proofs, not data: the save checks it and the record is
/// stored without it.
public struct AssetReceipt: Sendable, Equatable {
    /// The file.
    public var checksum: AssetChecksum
    /// Its size in bytes.
    public var size: Int64
    /// The database the upload URL was issued for.
    public var database: DatabaseID
    /// Who uploaded it.
    public var user: String
    /// After this the receipt no longer proves anything; the file may be collected.
    public var expires: Timestamp

    /// A receipt.
    public init(checksum: AssetChecksum, size: Int64, database: DatabaseID, user: String, expires: Timestamp) {
        self.checksum = checksum
        self.size = size
        self.database = database
        self.user = user
        self.expires = expires
    }

    /// The receipt as the text an upload answers with.
    func sealed(secret: [UInt8]) -> String {
        AssetToken.seal(.receipt, expires: expires, database: database, secret: secret) { writer in
            writer.raw(checksum.bytes)
            writer.zigzag(size)
            writer.string(user)
        }
    }

    /// The receipt `text` seals; `invalidArguments` if it is damaged, forged or
    /// expired at `now`.
    static func open(_ text: String, secret: [UInt8], now: Timestamp) throws -> AssetReceipt {
        try AssetToken.open(text, as: .receipt, secret: secret, now: now) { database, expires, reader in
            let checksum = try AssetToken.checksum(&reader)
            return AssetReceipt(
                checksum: checksum, size: try reader.zigzag(), database: database, user: try reader.string(),
                expires: expires)
        }
    }
}
