/// One person a share is open to (CloudKit's Share Participant; `Docs/HTTP-API.md`, "Sharing").
public struct ShareParticipant: Sendable, Hashable {
    /// The participant's role in the share. Raw values are CloudKit's.
    public enum Role: UInt8, Sendable, Hashable, CaseIterable {
        /// The zone's owner: always a participant, always read-write.
        case owner = 1
        /// Invited by name (or e-mail, or phone) by the owner.
        case privateUser = 3
        /// Joined through the share's public permission, uninvited.
        case publicUser = 4

        /// The wire name (`OWNER`, `USER`, `PUBLIC_USER`).
        public var wireName: String {
            switch self {
            case .owner: "OWNER"
            case .privateUser: "USER"
            case .publicUser: "PUBLIC_USER"
            }
        }
    }

    /// Where the participant stands. Raw values are CloudKit's.
    public enum Acceptance: UInt8, Sendable, Hashable, CaseIterable {
        /// Invited, not yet accepted: no access until they accept.
        case invited = 1
        /// Accepted: the share's records are in their shared database.
        case accepted = 2
        /// Left or was removed (kept only while a client may still see it).
        case removed = 3

        /// The wire name (`INVITED`, `ACCEPTED`, `REMOVED`).
        public var wireName: String {
            switch self {
            case .invited: "INVITED"
            case .accepted: "ACCEPTED"
            case .removed: "REMOVED"
            }
        }
    }

    /// The participant's user record name.
    public var userRecordName: String
    /// What they may do once accepted.
    public var permission: SharePermission
    /// Owner, invited user or public user.
    public var role: Role
    /// Invited, accepted or removed.
    public var acceptance: Acceptance

    /// A participant.
    public init(userRecordName: String, permission: SharePermission, role: Role, acceptance: Acceptance) {
        self.userRecordName = userRecordName
        self.permission = permission
        self.role = role
        self.acceptance = acceptance
    }
}
