import CumulusEngine
import CumulusModel

/// Shares on the wire (`Docs/HTTP-API.md`, "Sharing"): the request-only members of a share
/// record (`forRecord`, `publicPermission`, `participants`), the response-only ones
/// (`shortGUID`, `publicPermission`, `participants`, `owner`,
/// `currentUserParticipant`), and the ShortGUID Result of `records/resolve` and
/// `records/accept`.
enum ShareJSON {
    /// The access a share record's request asks for; `nil` when it says nothing.
    static func definition(_ json: JSONValue) throws -> ShareDefinition? {
        var definition = ShareDefinition()
        var said = false
        if let forRecord = json["forRecord"], forRecord != .null {
            guard let name = forRecord["recordName"]?.stringValue ?? forRecord.stringValue else {
                throw CumulusError(.invalidArguments, "'forRecord' needs a 'recordName' (the root of the hierarchy to share)")
            }
            definition.rootRecordName = name
            said = true
        }
        if let value = json["publicPermission"], value != .null {
            definition.publicPermission = try permission(value, field: "publicPermission")
            said = true
        }
        if let value = json["participants"], value != .null {
            guard case .array(let entries) = value else {
                throw CumulusError(.invalidArguments, "'participants' must be a list of participant dictionaries")
            }
            var invited: [ShareDefinition.Invitation] = []
            for (index, entry) in entries.enumerated() {
                guard case .object = entry else {
                    throw CumulusError(.invalidArguments, "participants[\(index)] must be an object")
                }
                if entry["type"]?.stringValue == ShareParticipant.Role.owner.wireName { continue }
                if entry["type"]?.stringValue == ShareParticipant.Role.publicUser.wireName { continue }
                let identity = entry["userIdentity"] ?? .null
                guard let user = identity["userRecordName"]?.stringValue ?? entry["userRecordName"]?.stringValue else {
                    if identity["lookupInfo"] != nil {
                        throw CumulusError(
                            .invalidArguments,
                            "participants[\(index)]: Cumulus users have no e-mail address or phone number to look up; invite by userIdentity.userRecordName")
                    }
                    throw CumulusError(.invalidArguments, "participants[\(index)] needs userIdentity.userRecordName")
                }
                let asked = try entry["permission"].map { try permission($0, field: "participants[\(index)].permission") }
                invited.append(ShareDefinition.Invitation(userRecordName: user, permission: asked ?? .readOnly))
            }
            definition.participants = invited
            said = true
        }
        return said ? definition : nil
    }

    private static func permission(_ json: JSONValue, field: String) throws -> SharePermission {
        guard let name = json.stringValue, let permission = SharePermission(wireName: name) else {
            throw CumulusError(.invalidArguments, "'\(field)' must be NONE, READ_ONLY or READ_WRITE")
        }
        return permission
    }

    /// A participant dictionary.
    static func participant(_ participant: ShareParticipant) -> JSONValue {
        [
            "userIdentity": ["userRecordName": .string(participant.userRecordName), "lookupInfo": .object([:])],
            "permission": .string(participant.permission.wireName),
            "type": .string(participant.role.wireName),
            "acceptanceStatus": .string(participant.acceptance.wireName),
        ]
    }

    /// Adds the response-only share members to a share record's dictionary, as
    /// `caller` may see them: the owner sees every participant, a participant the
    /// owner and themselves (CloudKit shows participants each other's identities only
    /// through the share's owner; Cumulus shows none).
    static func describe(_ share: Share, in dict: inout [String: JSONValue], caller: String?) {
        let isOwner = caller == share.owner
        dict["shortGUID"] = .string(share.shortGUID)
        dict["publicPermission"] = .string(share.publicPermission.wireName)
        let visible = share.participants.filter { isOwner || $0.role == .owner || $0.userRecordName == caller }
        dict["participants"] = .array(visible.map(participant))
        if let owner = share.participants.first(where: { $0.role == .owner }) { dict["owner"] = participant(owner) }
        if let caller, let entry = share.participant(caller) { dict["currentUserParticipant"] = participant(entry) }
        if let root = share.rootRecordName { dict["forRecord"] = ["recordName": .string(root)] }
    }

    /// The ShortGUID Result dictionary.
    static func result(_ metadata: ShareMetadata, caller: String, encode: (Record) throws -> JSONValue) throws -> JSONValue {
        let share = metadata.share
        var dict: [String: JSONValue] = [
            "containerIdentifier": .string(metadata.ownerDatabase.container),
            "environment": .string(metadata.ownerDatabase.environment.name),
            "databaseScope": .string(caller == share.owner ? "PRIVATE" : "SHARED"),
            "zoneID": share.zoneID.wireJSON,
            "shortGUID": .string(share.shortGUID),
            "ownerIdentity": ["userRecordName": .string(share.owner)],
        ]
        if let root = share.rootRecordName { dict["rootRecordName"] = .string(root) }
        if let record = metadata.shareRecord { dict["share"] = try encode(record) }
        if let root = metadata.rootRecord { dict["rootRecord"] = try encode(root) }
        if let entry = metadata.participant {
            dict["participantPermission"] = .string(entry.permission.wireName)
            dict["participantStatus"] = .string(entry.acceptance.wireName)
            dict["participantType"] = .string(entry.role.wireName)
        }
        return .object(dict)
    }
}
