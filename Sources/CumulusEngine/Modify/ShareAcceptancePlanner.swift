import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Turns a user's acceptance of shares into one commit (the door for share
/// acceptance; the saves and deletions of share records go through ``ModifyPlanner``):
/// runs on the writer thread inside the group's transaction, so each share is read as
/// it stands after every earlier commit, and writes nothing itself.
///
/// An invited participant (or one who left) becomes accepted; anyone else joins as a
/// public participant when the share's public permission allows, and is refused
/// (`permissionFailure`) otherwise. Accepting twice changes nothing; a share named
/// twice is accepted once.
struct ShareAcceptancePlanner {
    let views: Views
    /// The container environment the short GUIDs are looked up in.
    let container: String
    let environment: DatabaseID.Environment
    let user: String
    let requestID: String

    /// Plans accepting each share `shortGUIDs` names: per GUID, the share's metadata
    /// as the user then sees it, or why it was refused.
    func plan(_ shortGUIDs: [String], _ context: LogWriter.PlanContext) throws
        -> (CommitRequest?, [Result<ShareMetadata, CumulusError>])
    {
        var events: [Event] = []
        var accepted: [String: Share] = [:]
        var results: [Result<ShareMetadata, CumulusError>] = []
        for guid in shortGUIDs {
            do {
                var (database, share) = try Container.findShare(
                    guid, container: container, environment: environment, views, context.transaction)
                if let earlier = accepted[guid] { share = earlier }
                if user != share.owner {
                    if let index = share.participants.firstIndex(where: { $0.userRecordName == user }) {
                        if share.participants[index].acceptance != .accepted {
                            share.participants[index].acceptance = .accepted
                            events.append(.shareSaved(database: database, share: share))
                        }
                    } else if share.publicPermission != .none {
                        guard share.participants.count < Share.maxParticipants else {
                            throw CumulusError(.limitExceeded, "the share already has \(Share.maxParticipants) participants")
                        }
                        share.participants.append(ShareParticipant(
                            userRecordName: user, permission: share.publicPermission, role: .publicUser, acceptance: .accepted))
                        events.append(.shareSaved(database: database, share: share))
                    } else {
                        throw CumulusError(.permissionFailure, "this share was not offered to you; ask its owner for an invitation")
                    }
                }
                accepted[guid] = share
                results.append(
                    .success(try Container.metadata(share, database, user: user, fetchRoot: false, views, context.transaction)))
            } catch let error as CumulusError {
                results.append(.failure(error))
            }
        }
        let request = events.isEmpty ? nil : CommitRequest(actor: user, requestID: requestID, events: events)
        return (request, results)
    }
}
