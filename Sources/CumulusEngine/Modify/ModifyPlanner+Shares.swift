import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Shares in a modify operation (`Docs/DATA-MODEL.md`, "Sharing"): the owner saving and
/// deleting `cloudkit.share` records (which become `shareSaved` / `shareDeleted`
/// events beside the record's own), and what a participant writing through their
/// shared database may touch. Every check reads the shares as the plan has left
/// them, so access is decided at the commit that uses it.
extension ModifyPlanner {
    /// Throws unless the participant (the actor, writing through their shared
    /// database) may save `record` over `existing`: a read-write share must govern the
    /// stored version and the new one (a new record joins a hierarchy through its
    /// parent). Share records are the owner's alone.
    func checkParticipantSave(_ record: Record, existing: Record?, _ overlay: inout PlanOverlay) throws {
        let id = record.recordID
        if Share.isShareType(record.recordType) || existing.map({ Share.isShareType($0.recordType) }) == true {
            throw CumulusError(
                .permissionFailure, "only the zone's owner changes a share; a participant leaves it by deleting it",
                recordID: id)
        }
        if let existing { try requireWrite(existing, &overlay) }
        try requireWrite(record, &overlay)
    }

    /// Throws unless the participant may delete `existing`: read-write access, and
    /// not the root of a share (only the owner deletes that).
    func checkParticipantDelete(_ existing: Record, _ overlay: inout PlanOverlay) throws {
        try requireWrite(existing, &overlay)
        let zone = existing.recordID.zoneID
        if try overlay.shares(inZone: zone).contains(where: { $0.rootRecordName == existing.recordID.recordName }) {
            throw CumulusError(
                .permissionFailure, "only the owner deletes the root of a shared hierarchy", recordID: existing.recordID)
        }
    }

    /// A participant deleting a share they are in: they leave it (CloudKit's rule),
    /// the share and its records stay.
    func planLeave(_ shareRecord: Record, _ overlay: inout PlanOverlay) throws {
        let zone = shareRecord.recordID.zoneID
        guard var share = try overlay.shares(inZone: zone).first(where: { $0.recordName == shareRecord.recordID.recordName }),
            let index = share.participants.firstIndex(where: { $0.userRecordName == actor && $0.role != .owner }),
            share.participants[index].acceptance != .removed
        else {
            throw CumulusError(.unknownItem, "record \(shareRecord.recordID.recordName) does not exist", recordID: shareRecord.recordID)
        }
        share.participants[index].acceptance = .removed
        try overlay.saveShare(share)
    }

    /// Whether the participant may see `record` (read-only or read-write), as the
    /// shares stand in the plan.
    func participantSees(_ record: Record, _ overlay: inout PlanOverlay) throws -> Bool {
        try participantAccess(to: record, &overlay) != nil
    }

    /// The participant's access to `record` under the shares as the plan has left them.
    private func participantAccess(to record: Record, _ overlay: inout PlanOverlay) throws -> SharePermission? {
        let zone = record.recordID.zoneID
        let scope = ShareScope(user: actor, shares: try overlay.shares(inZone: zone))
        return try scope.access(to: record, parentOf: { try overlay.parentName($0, in: zone) })
    }

    private func requireWrite(_ record: Record, _ overlay: inout PlanOverlay) throws {
        switch try participantAccess(to: record, &overlay) {
        case .readWrite?:
            return
        case .readOnly?:
            throw CumulusError(
                .permissionFailure, "the share of \(record.recordID.recordName) is read-only for you",
                recordID: record.recordID)
        case .none?, nil:
            throw CumulusError(
                .permissionFailure,
                "record \(record.recordID.recordName) is not in a share open to you (a new record joins a shared hierarchy through its parent)",
                recordID: record.recordID)
        }
    }

    /// The owner saved share record `record` (already in the overlay): the share it
    /// defines, checked against the zone's other shares, and the root's `share`
    /// reference for a new hierarchy share.
    func planShare(_ definition: ShareDefinition?, record: Record, tag: String, _ overlay: inout PlanOverlay) throws {
        let id = record.recordID
        let zone = id.zoneID
        guard database.scope == .private else {
            throw CumulusError(.invalidArguments, "shares live in their owner's private database, not the \(database.scope) one", recordID: id)
        }
        guard !zone.isDefaultZone else {
            throw CumulusError(.invalidArguments, "the default zone cannot be shared; save the share in a custom zone", recordID: id)
        }
        let all = try overlay.shares(inZone: zone)
        let old = all.first { $0.recordName == id.recordName }
        let others = all.filter { $0.recordName != id.recordName }
        var root: String?
        if id.recordName == Share.zoneWideRecordName {
            if definition?.rootRecordName != nil {
                throw CumulusError(.invalidArguments, "a zone-wide share (cloudkit.zoneshare) has no forRecord", recordID: id)
            }
            if !others.isEmpty {
                throw CumulusError(
                    .invalidArguments,
                    "zone \(zone.zoneName) holds shared hierarchies (\(others.map(\.recordName).sorted().joined(separator: ", "))); delete them before sharing the whole zone",
                    recordID: id)
            }
        } else {
            if others.contains(where: \.isZoneWide) {
                // CloudKit answers serverRejectedRequest; here that code means "retry",
                // which would not help.
                throw CumulusError(
                    .invalidArguments,
                    "zone \(zone.zoneName) is shared whole (cloudkit.zoneshare); its records cannot be shared on their own",
                    recordID: id)
            }
            if let old {
                root = old.rootRecordName
                if let asked = definition?.rootRecordName, asked != root {
                    throw CumulusError(.invalidArguments, "a share's root cannot change; delete the share and share \(asked) anew", recordID: id)
                }
            } else {
                guard let asked = definition?.rootRecordName else {
                    throw CumulusError(
                        .invalidArguments,
                        "a new share needs forRecord (the root of the hierarchy to share), or the record name cloudkit.zoneshare to share the whole zone",
                        recordID: id)
                }
                root = asked
                try attachRoot(asked, to: id, others: others, tag: tag, &overlay)
            }
        }
        let share = Share(
            owner: database.owner, recordName: id.recordName, zoneID: zone, rootRecordName: root,
            shortGUID: old?.shortGUID ?? Self.newShortGUID(),
            publicPermission: definition?.publicPermission ?? old?.publicPermission ?? .none,
            participants: try participants(definition, old: old, recordID: id))
        try overlay.saveShare(share)
    }

    /// Points the root's `share` at the new share record, after checking the root
    /// (and its ancestors) are in no other share.
    private func attachRoot(
        _ rootName: String, to shareID: RecordID, others: [Share], tag: String, _ overlay: inout PlanOverlay
    ) throws {
        let zone = shareID.zoneID
        let rootID = RecordID(recordName: rootName, zoneID: zone)
        guard let stored = try overlay.record(rootID) else {
            throw CumulusError(.unknownItem, "the share's root record \(rootName) does not exist; save it first or in the same operation", recordID: shareID)
        }
        if Share.isShareType(stored.recordType) {
            throw CumulusError(.invalidArguments, "a share cannot be the root of another share", recordID: shareID)
        }
        let scope = ShareScope(user: database.owner, shares: others)
        if let holder = try scope.governingShare(of: stored, parentOf: { try overlay.parentName($0, in: zone) }) {
            throw CumulusError(
                .invalidArguments,
                "record \(rootName) is already in share \(holder.recordName); a record is in one share at most",
                recordID: shareID)
        }
        var root = stored
        root.share = Reference(recordID: shareID, action: .none)
        root.recordChangeTag = tag
        root.clearChangedKeys()
        try overlay.save(root, replacing: stored, changedKeys: [])
    }

    /// The participants a save leaves: the owner first, then the invited (keeping the
    /// acceptance of those invited before), then public users who joined while the
    /// public permission still lets them in.
    private func participants(_ definition: ShareDefinition?, old: Share?, recordID: RecordID) throws -> [ShareParticipant] {
        let owner = database.owner
        var result = [ShareParticipant(userRecordName: owner, permission: .readWrite, role: .owner, acceptance: .accepted)]
        let previous = old?.participants.filter { $0.role != .owner } ?? []
        guard let invited = definition?.participants else { return result + previous }
        var seen: Set<String> = [owner]
        for invitation in invited where seen.insert(invitation.userRecordName).inserted {
            try NameRules.checkRecordName(invitation.userRecordName, allowSystem: true)
            guard invitation.permission != .none else {
                throw CumulusError(
                    .invalidArguments, "participant \(invitation.userRecordName) needs READ_ONLY or READ_WRITE permission",
                    recordID: recordID, field: "participants")
            }
            let prior = previous.first { $0.userRecordName == invitation.userRecordName }
            result.append(ShareParticipant(
                userRecordName: invitation.userRecordName, permission: invitation.permission, role: .privateUser,
                acceptance: prior?.acceptance == .accepted ? .accepted : .invited))
        }
        let publicPermission = definition?.publicPermission ?? old?.publicPermission ?? .none
        if publicPermission != .none {
            result += previous.filter { $0.role == .publicUser && !seen.contains($0.userRecordName) }
        }
        guard result.count <= Share.maxParticipants else {
            throw CumulusError(
                .limitExceeded, "a share has at most \(Share.maxParticipants) participants, the owner included; this one would have \(result.count)",
                recordID: recordID, field: "participants")
        }
        return result
    }

    /// After deleting `victims` (a direct delete and its cascade): a deleted share
    /// record ends its share and frees its root; a deleted root takes its share
    /// record with it (CloudKit's rule).
    func planShareDeletions(_ victims: [RecordID], tag: String, _ overlay: inout PlanOverlay) throws {
        guard let zone = victims.first?.zoneID else { return }
        let shares = try overlay.shares(inZone: zone)
        guard !shares.isEmpty else { return }
        let deleted = Set(victims.map(\.recordName))
        for share in shares {
            let rootGone = share.rootRecordName.map(deleted.contains) ?? false
            guard deleted.contains(share.recordName) || rootGone else { continue }
            if !deleted.contains(share.recordName), let record = try overlay.deletable(share.recordID) {
                try overlay.delete(record, cause: .cascade(owner: RecordID(recordName: share.rootRecordName ?? "", zoneID: zone)))
            }
            try overlay.deleteShare(share.recordName, in: zone)
            if !rootGone, let rootName = share.rootRecordName,
                let stored = try overlay.record(RecordID(recordName: rootName, zoneID: zone))
            {
                var root = stored
                root.share = nil
                root.recordChangeTag = tag
                root.clearChangedKeys()
                try overlay.save(root, replacing: stored, changedKeys: [])
            }
        }
    }

    /// 16 random bytes in lower-case base 32: unguessable, and safe in a URL.
    static func newShortGUID() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var random = SystemRandomNumberGenerator()
        var result: [UInt8] = []
        for _ in 0..<26 { result.append(alphabet[Int(random.next() % 32)]) }
        return String(decoding: result, as: UTF8.self)
    }
}
