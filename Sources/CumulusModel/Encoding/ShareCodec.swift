/// The binary form of a ``Share`` (`Docs/LOG-FORMAT.md` §4, the `shareSaved` event,
/// and the `shares` view): deterministic, so a share encodes to the same bytes on
/// every node.
///
///     string owner ‖ string recordName ‖ zoneID ‖ u8 hasRoot [‖ string root]
///     ‖ string shortGUID ‖ u8 publicPermission
///     ‖ varint n ‖ n × (string user ‖ u8 permission ‖ u8 role ‖ u8 acceptance)
public enum ShareCodec {
    /// Appends `share`.
    public static func encode(_ share: Share, into writer: inout BinaryWriter) {
        writer.string(share.owner)
        writer.string(share.recordName)
        writer.zoneID(share.zoneID)
        if let root = share.rootRecordName {
            writer.u8(1)
            writer.string(root)
        } else {
            writer.u8(0)
        }
        writer.string(share.shortGUID)
        writer.u8(share.publicPermission.rawValue)
        writer.length(share.participants.count)
        for participant in share.participants {
            writer.string(participant.userRecordName)
            writer.u8(participant.permission.rawValue)
            writer.u8(participant.role.rawValue)
            writer.u8(participant.acceptance.rawValue)
        }
    }

    /// `share`'s bytes.
    public static func encode(_ share: Share) -> [UInt8] {
        var writer = BinaryWriter(capacity: 128)
        encode(share, into: &writer)
        return writer.bytes
    }

    /// Reads a share; throws `invalidArguments` on anything malformed.
    public static func decode(from reader: inout BinaryReader) throws -> Share {
        let owner = try reader.string()
        let recordName = try reader.string()
        let zoneID = try reader.zoneID()
        let root: String?
        switch try reader.u8() {
        case 0: root = nil
        case 1: root = try reader.string()
        case let other: throw reader.failure("unknown share root flag \(other)")
        }
        let shortGUID = try reader.string()
        let publicPermission = try permission(&reader)
        var participants: [ShareParticipant] = []
        for _ in 0..<(try reader.length(minimumItemSize: 4)) {
            let user = try reader.string()
            let permission = try permission(&reader)
            let rawRole = try reader.u8()
            guard let role = ShareParticipant.Role(rawValue: rawRole) else {
                throw reader.failure("unknown participant role \(rawRole)")
            }
            let rawAcceptance = try reader.u8()
            guard let acceptance = ShareParticipant.Acceptance(rawValue: rawAcceptance) else {
                throw reader.failure("unknown acceptance status \(rawAcceptance)")
            }
            participants.append(
                ShareParticipant(userRecordName: user, permission: permission, role: role, acceptance: acceptance))
        }
        return Share(
            owner: owner, recordName: recordName, zoneID: zoneID, rootRecordName: root, shortGUID: shortGUID,
            publicPermission: publicPermission, participants: participants)
    }

    /// Reads the bytes ``encode(_:)`` made, all of them.
    public static func decode(_ bytes: [UInt8]) throws -> Share {
        try bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer)
            let share = try decode(from: &reader)
            try reader.expectEnd()
            return share
        }
    }

    private static func permission(_ reader: inout BinaryReader) throws -> SharePermission {
        let raw = try reader.u8()
        guard let permission = SharePermission(rawValue: raw) else { throw reader.failure("unknown share permission \(raw)") }
        return permission
    }
}
