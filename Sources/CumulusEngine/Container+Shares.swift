import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// Finding and accepting shares by their short GUID (`records/resolve`,
/// `records/accept`; `Docs/HTTP-API.md`, "Sharing"). Accepting is a commit of its
/// own — a `shareSaved`
/// event with the caller's new status — so the moment a zone entered someone's
/// shared database is in the log like every other access change.
extension Container {
    /// The metadata of each share `shortGUIDs` names in `container`'s `environment`,
    /// for `user`: the owner, anyone the share names, or anyone at all when its public
    /// permission is not `NONE`. Per GUID: `unknownItem` for none, `permissionFailure`
    /// for a share the caller may not see.
    public func resolveShares(
        _ shortGUIDs: [String], container name: String, environment: DatabaseID.Environment, fetchRoot: Bool = false,
        as user: String
    ) throws -> [Result<ShareMetadata, CumulusError>] {
        let views = self.views
        return try store.environment.read { txn in
            try shortGUIDs.map { guid in
                do {
                    let (database, share) = try Self.findShare(guid, container: name, environment: environment, views, txn)
                    let entry = share.participant(user)
                    guard user == share.owner || (entry != nil && entry?.acceptance != .removed)
                        || share.publicPermission != .none
                    else {
                        throw CumulusError(.permissionFailure, "this share was not offered to you; ask its owner for an invitation")
                    }
                    return .success(try Self.metadata(share, database, user: user, fetchRoot: fetchRoot, views, txn))
                } catch let error as CumulusError {
                    return .failure(error)
                }
            }
        }
    }

    /// Accepts each share `shortGUIDs` names for `user`: an invited participant (or
    /// one who left) becomes accepted; anyone else joins as a public participant when
    /// the share's public permission allows, and is refused (`permissionFailure`)
    /// otherwise. Accepting twice changes nothing. One commit for all of them.
    /// `requestID` becomes the commit's request ID: the server passes its request's, so
    /// the log and audit exports match its logs.
    public func acceptShares(
        _ shortGUIDs: [String], container name: String, environment: DatabaseID.Environment, as user: String,
        requestID: String = UUID.random().uuidString
    ) async throws -> [Result<ShareMetadata, CumulusError>] {
        let planner = ShareAcceptancePlanner(
            views: views, container: name, environment: environment, user: user, requestID: requestID)
        let (_, results) = try await writer.submit { context in try planner.plan(shortGUIDs, context) }
        return results
    }

    /// The share `guid` names, if it is in `container`'s `environment`.
    static func findShare(
        _ guid: String, container: String, environment: DatabaseID.Environment, _ views: Views, _ txn: LMDBReadTransaction
    ) throws -> (DatabaseID, Share) {
        guard let (database, share) = try views.share(shortGUID: guid, txn), database.container == container,
            database.environment == environment
        else {
            throw CumulusError(.unknownItem, "no share has the short GUID '\(guid.prefix(80))'")
        }
        return (database, share)
    }

    static func metadata(
        _ share: Share, _ database: DatabaseID, user: String, fetchRoot: Bool, _ views: Views, _ txn: LMDBReadTransaction
    ) throws -> ShareMetadata {
        let shareRecord = try views.record(share.recordID, in: database, txn)
        var root: Record?
        if fetchRoot, let name = share.rootRecordName, share.access(for: user) != nil {
            root = try views.record(RecordID(recordName: name, zoneID: share.zoneID), in: database, txn)
        }
        return ShareMetadata(
            ownerDatabase: database, share: share, shareRecord: shareRecord, rootRecord: root,
            participant: share.participant(user))
    }
}
