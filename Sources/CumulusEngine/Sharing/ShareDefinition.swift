import CumulusModel

/// What a client sends with a share record (`Docs/HTTP-API.md`, "Sharing": `forRecord`,
/// `publicPermission`, `participants`): the access it asks for. `nil` members keep
/// what the stored share has, so re-saving a fetched share changes nothing.
public struct ShareDefinition: Sendable, Hashable {
    /// One person to invite, by user record name, with what they may do.
    public struct Invitation: Sendable, Hashable {
        /// The invited user's record name.
        public var userRecordName: String
        /// Read-only or read-write.
        public var permission: SharePermission

        /// An invitation.
        public init(userRecordName: String, permission: SharePermission) {
            self.userRecordName = userRecordName
            self.permission = permission
        }
    }

    /// The hierarchy's root (`forRecord`), for a new hierarchy share.
    public var rootRecordName: String?
    /// What anyone with the short GUID may do.
    public var publicPermission: SharePermission?
    /// Everyone invited besides the owner; a user left out is removed.
    public var participants: [Invitation]?

    /// A definition.
    public init(rootRecordName: String? = nil, publicPermission: SharePermission? = nil, participants: [Invitation]? = nil) {
        self.rootRecordName = rootRecordName
        self.publicPermission = publicPermission
        self.participants = participants
    }
}
