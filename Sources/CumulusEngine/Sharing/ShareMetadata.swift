import CumulusModel

/// What `records/resolve` and `records/accept` answer for one short GUID
/// (CloudKit's ShortGUID Result dictionary; `Docs/HTTP-API.md`, "Sharing").
public struct ShareMetadata: Sendable {
    /// The owner's private database, which holds the share.
    public var ownerDatabase: DatabaseID
    /// The share as it stands after the request.
    public var share: Share
    /// The share record (its title and other fields), if it could be read.
    public var shareRecord: Record?
    /// The root of a hierarchy share, when asked for and open to the caller.
    public var rootRecord: Record?
    /// The caller's own entry, if the share names them.
    public var participant: ShareParticipant?
}
