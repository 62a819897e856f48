/// The access a `cloudkit.share` record grants (`Docs/DATA-MODEL.md`, "Sharing"): who may
/// see which records of its owner's zone, and what they may do with them.
///
/// The share record itself (its title and other fields) is an ordinary record of
/// the zone; this value is the part the server keeps and checks, logged as its own
/// event (`shareSaved`) in the commit that changes it, so every node, replay and
/// audit export derives the same answer to "who could see what, when".
public struct Share: Sendable, Hashable {
    /// The record type of share records on the wire (CloudKit's docs also spell
    /// `cloudKit.share`; both are accepted, this one is stored and sent).
    public static let recordType = "cloudkit.share"
    /// The record name of the share that opens a whole zone (`CKRecordNameZoneWideShare`).
    public static let zoneWideRecordName = "cloudkit.zoneshare"
    /// The spelling in Apple's Web Services pages, accepted on input.
    public static let documentedRecordType = "cloudKit.share"
    /// Fields the server keeps on share records that a client may also write
    /// (CloudKit's `CKShare.SystemFieldKey`), allowed although they contain a dot.
    public static let systemFieldKeys: Set<String> = ["cloudkit.title", "cloudkit.thumbnailImageData", "cloudkit.type"]
    /// Most participants of one share, the owner included (`tooManyParticipants` beyond).
    public static let maxParticipants = 100

    /// The user whose private database holds the zone, and so the share.
    public var owner: String
    /// The share record's name: ``zoneWideRecordName`` or a name of the owner's choosing.
    public var recordName: String
    /// The zone of the owner's private database the share lives in.
    public var zoneID: ZoneID
    /// The root of a shared hierarchy; `nil` for a zone-wide share.
    public var rootRecordName: String?
    /// The short GUID a participant accepts it by (unguessable; stable for the share's life).
    public var shortGUID: String
    /// What anyone holding the short GUID may do (`none`: invited participants only).
    public var publicPermission: SharePermission
    /// Everyone the share names, the owner first.
    public var participants: [ShareParticipant]

    /// A share.
    public init(
        owner: String, recordName: String, zoneID: ZoneID, rootRecordName: String?, shortGUID: String,
        publicPermission: SharePermission, participants: [ShareParticipant]
    ) {
        self.owner = owner
        self.recordName = recordName
        self.zoneID = zoneID
        self.rootRecordName = rootRecordName
        self.shortGUID = shortGUID
        self.publicPermission = publicPermission
        self.participants = participants
    }

    /// Whether it opens the whole zone rather than a hierarchy.
    public var isZoneWide: Bool { rootRecordName == nil }

    /// The share record's ID.
    public var recordID: RecordID { RecordID(recordName: recordName, zoneID: zoneID) }

    /// `user`'s entry, if the share names them.
    public func participant(_ user: String) -> ShareParticipant? {
        participants.first { $0.userRecordName == user }
    }

    /// What `user` may do with the shared records now: the owner everything; an
    /// accepted participant their permission; anyone else nothing (`nil`).
    public func access(for user: String) -> SharePermission? {
        if user == owner { return .readWrite }
        guard let entry = participant(user), entry.acceptance == .accepted else { return nil }
        let permission = entry.role == .publicUser ? publicPermission : entry.permission
        return permission == .none ? nil : permission
    }

    /// Whether `type` names share records (either spelling).
    public static func isShareType(_ type: String) -> Bool {
        type == recordType || type == documentedRecordType
    }
}
