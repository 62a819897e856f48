import CumulusLog
import CumulusModel

/// A record deleted since a token: its ID, its type (tombstones carry it, as in
/// CloudKit) and why it went.
public struct RecordDeletion: Sendable, Hashable {
    /// The deleted record.
    public var recordID: RecordID
    /// Its record type.
    public var recordType: String
    /// Direct, a cascade from its owner, or its zone's deletion.
    public var cause: DeleteCause
}

/// One page of a zone's changes (`Docs/DATA-MODEL.md`, "Change feeds").
public struct ZoneChanges: Sendable {
    /// Records created or changed since the token, each once, at its current version.
    public var changed: [Record]
    /// Records deleted since the token (and not re-created since).
    public var deleted: [RecordDeletion]
    /// The token to pass next time.
    public var token: ChangeToken
    /// Whether more changes remain: fetch again with ``token``.
    public var moreComing: Bool
    /// The caller's `clientChangeTokenData` from its last modify in this zone.
    public var clientChangeTokenData: [UInt8]?
    /// Bytes the page's changed records take as stored, as counted against its byte
    /// limit: what a response sharing one budget over several zones takes off it.
    public var storedBytes = 0
}

/// One page of a database's changes.
public struct DatabaseChanges: Sendable {
    /// Zones whose records or settings changed (and that still exist).
    public var changedZones: [ZoneID]
    /// Zones deleted.
    public var deletedZones: [ZoneID]
    /// The token to pass next time.
    public var token: ChangeToken
    /// Whether more changes remain.
    public var moreComing: Bool
}
