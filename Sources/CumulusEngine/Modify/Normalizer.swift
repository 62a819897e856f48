import CumulusModel

/// Resolves the `__defaultOwner__` placeholder (`Docs/DATA-MODEL.md`, "Zones"): in a private or shared
/// database it means the database's owner, so a zone named either way is the same
/// zone and is stored once. The public database keeps the placeholder.
struct Normalizer {
    let database: DatabaseID

    /// Whether this database replaces the placeholder at all (the public one keeps it).
    private var resolvesPlaceholders: Bool { database.scope != .public && !database.owner.isEmpty }

    /// Whether `zone` names the placeholder owner that ``zone(_:)`` replaces.
    private func isPlaceholder(_ zone: ZoneID) -> Bool {
        resolvesPlaceholders && zone.ownerName == ZoneID.defaultOwnerName
    }

    /// The zone ID as stored.
    func zone(_ zone: ZoneID) -> ZoneID {
        guard isPlaceholder(zone) else { return zone }
        return ZoneID(zoneName: zone.zoneName, ownerName: database.owner)
    }

    /// The record ID as stored.
    func recordID(_ id: RecordID) -> RecordID {
        RecordID(recordName: id.recordName, zoneID: zone(id.zoneID))
    }

    /// The record with its ID and every reference (fields, lists, parent, share)
    /// normalized; changed keys are kept. A record with no placeholder anywhere is
    /// returned as it came: rebuilding its values and changed keys for nothing was 4 %
    /// of a 400-record operation.
    func record(_ record: Record) -> Record {
        guard needsNormalizing(record) else { return record }
        var result = record
        result.recordID = recordID(record.recordID)
        var fields = record.fields
        for (key, value) in fields { fields[key] = self.value(value) }
        var encrypted = record.encryptedValues
        for (key, value) in encrypted { encrypted[key] = self.value(value) }
        let changed = record.changedKeys
        result.setStored(fields: fields, encryptedValues: encrypted)
        if let parent = record.parent { result.parent = Reference(recordID: recordID(parent.recordID), action: parent.action) }
        if let share = record.share { result.share = Reference(recordID: recordID(share.recordID), action: share.action) }
        // Normalizing is not a client change: restore exactly what the client touched.
        result.clearChangedKeys()
        for key in changed { result.markChanged(key) }
        return result
    }

    private func needsNormalizing(_ record: Record) -> Bool {
        guard resolvesPlaceholders else { return false }
        if isPlaceholder(record.recordID.zoneID) { return true }
        if let parent = record.parent, isPlaceholder(parent.recordID.zoneID) { return true }
        if let share = record.share, isPlaceholder(share.recordID.zoneID) { return true }
        var found = false
        record.forEachFieldReference { if isPlaceholder($0.recordID.zoneID) { found = true } }
        if found { return true }
        return record.encryptedValues.values.contains { value in
            value.references.contains { isPlaceholder($0.recordID.zoneID) }
        }
    }

    private func value(_ value: FieldValue) -> FieldValue {
        switch value {
        case .reference(let reference):
            .reference(Reference(recordID: recordID(reference.recordID), action: reference.action))
        case .list(let items):
            .list(items.map(self.value))
        default:
            value
        }
    }
}
