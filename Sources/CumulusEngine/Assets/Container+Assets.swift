import CumulusLog
import CumulusModel
import CumulusViews
import Foundation

/// The asset flow of a node (`Docs/HTTP-API.md`, "Assets"): storing an upload under its
/// ticket, opening download tickets, checking the store against the views.
extension Container {
    /// The most bytes one asset may hold unless `serve` says otherwise: CloudKit's
    /// PropertyMetrics figure (its upload page says 15 MB; `Docs/HTTP-API.md`).
    public static let defaultMaxAssetBytes: Int64 = 50 * 1_000_000

    /// Stores the bytes `read` yields (`nil`: the end) under the upload URL text
    /// `ticketText`, at most `limit` of them; returns the file and the receipt the
    /// record save must carry. The file is durable before the receipt exists.
    /// `invalidArguments` for a damaged, forged or expired URL, `limitExceeded` past
    /// `limit` (nothing kept).
    ///
    /// An upload URL takes one file (`oneUse`; the Swift API's own tickets are not URLs
    /// a client holds), and each user and container may upload `quota`'s bytes within
    /// its window (``UploadLedger``).
    public func receiveAsset(
        ticket ticketText: String, limit: Int64, quota: UploadQuota = UploadQuota(), oneUse: Bool = true,
        read: () async throws -> [UInt8]?
    ) async throws -> (stored: StoredAsset, receipt: String, ticket: AssetUploadTicket) {
        let now = Timestamp.now()
        let ticket = try AssetUploadTicket.open(ticketText, secret: secret, now: now)
        try requireLeaderForUploads()
        try uploads.begin(ticketText, ticket, oneUse: oneUse, quota: quota, now: now)
        let stored: StoredAsset
        do {
            let upload = try assets.beginUpload(limit: limit)
            while let chunk = try await read() { try upload.append(chunk) }
            stored = try upload.finish()
        } catch {
            // Nothing was kept: the URL may be tried again.
            if oneUse { uploads.abandon(ticketText) }
            throw error
        }
        uploads.finish(ticket, bytes: stored.size)
        let receipt = AssetReceipt(
            checksum: stored.checksum, size: stored.size, database: ticket.database, user: ticket.user,
            expires: Timestamp.now().adding(AssetUploadTicket.lifetime))
        return (stored, receipt.sealed(secret: secret), ticket)
    }

    /// `notLeader` unless this node takes writes: uploads are writes (their files
    /// reach followers with the commits that refer to them).
    func requireLeaderForUploads() throws {
        if let refusal = writer.gate.refusal {
            // The refusal says where writes go, if this node knows.
            let why = (refusal as? CumulusError)?.message ?? "\(refusal)"
            throw CumulusError(.notLeader, "this node takes no uploads (\(why)); ask the leader for an upload URL")
        }
    }

    /// The file a download URL's text names, if it is valid now and the file is
    /// stored here: `invalidArguments` for a damaged, forged or expired URL,
    /// `unknownItem` for a file this node does not hold.
    public func downloadableAsset(ticket text: String) throws -> StoredAsset {
        let ticket = try AssetDownloadTicket.open(text, secret: secret, now: .now())
        guard let size = assets.size(of: ticket.checksum) else {
            throw CumulusError(.unknownItem, "the asset \(ticket.checksum) is not stored on this node")
        }
        return StoredAsset(checksum: ticket.checksum, size: size)
    }

    /// The sealed text of a download URL for `asset`, found in a record of `database`
    /// that the caller may read, or `nil` if its checksum names no file stored here.
    public func downloadToken(for asset: Asset, in database: DatabaseID) -> String? {
        guard let checksum = AssetChecksum(hex: asset.fileChecksum) else { return nil }
        return AssetDownloadTicket(
            checksum: checksum, database: database, expires: Timestamp.now().adding(AssetDownloadTicket.lifetime)
        ).sealed(secret: secret)
    }

    /// Every file a record version the retained log can reach refers to: what a
    /// follower must hold and what `verify` checks, in checksum order.
    public func reachableAssets() throws -> [AssetChecksum] {
        let first = store.firstRetained
        return try store.environment.read { try views.reachableAssets(retainedFrom: first, in: $0) }
    }

    /// What is wrong with the asset store, one line per file: each reachable file
    /// (``reachableAssets()``) missing or whose bytes do not hash to its name, naming
    /// the checksum and a current record holding it. Empty when all is well.
    public func verifyAssets() throws -> [String] {
        var problems: [String] = []
        for checksum in try reachableAssets() {
            guard let problem = assets.problem(with: checksum) else { continue }
            let holder = try store.environment.read { try views.recordName(holding: checksum, in: $0) }
            problems.append(
                "asset \(checksum) \(holder.map { "(held by record \($0))" } ?? "(held by an older record version)"): \(problem)")
        }
        return problems
    }
}

extension Timestamp {
    /// This time plus `duration`, at millisecond precision.
    func adding(_ duration: Duration) -> Timestamp {
        Timestamp(millisecondsSince1970: millisecondsSince1970 + duration.milliseconds)
    }
}
