import CumulusModel

/// One state change, as appended to the log (`Docs/LOG-FORMAT.md` §4). Views are derived from
/// events alone, so an event carries everything its `apply` needs.
///
/// The binary form (``EventCodec``) gives each case a tag; tags 16–31 are kept for
/// sharing events, so a later version can add them without renumbering.
public enum Event: Sendable, Hashable {
    /// A record was created or changed: its full new version as stored, and the
    /// keys the operation changed (sorted).
    case recordSaved(database: DatabaseID, record: Record, changedKeys: [String])
    /// A record was deleted; `recordType` lets tombstones carry the type.
    case recordDeleted(database: DatabaseID, recordID: RecordID, recordType: String, cause: DeleteCause)
    /// A reference to `recordID` was added or removed by `source`, so the target got
    /// a new change tag (`Docs/DATA-MODEL.md`, "References"): its own event, so feeds
    /// show the new tag.
    case changeTagBumped(database: DatabaseID, recordID: RecordID, changeTag: String, source: RecordID)
    /// A zone was created or its capabilities changed.
    case zoneSaved(database: DatabaseID, zone: Zone)
    /// A zone and every record in it were deleted (one event, not one per record).
    case zoneDeleted(database: DatabaseID, zoneID: ZoneID)
    /// A subscription was created or replaced; `definition` is its versioned encoding.
    case subscriptionSaved(database: DatabaseID, subscriptionID: String, definition: [UInt8])
    /// A subscription was deleted.
    case subscriptionDeleted(database: DatabaseID, subscriptionID: String)
    /// A zstd dictionary for compressing later frames: `id` is the number frames
    /// name in their header, `bytes` the dictionary itself.
    case dictionaryInstalled(id: UInt32, bytes: [UInt8])
    /// A container environment's schema was replaced whole (an import, a deploy, a
    /// reset): `text` is its canonical form (``SchemaPrinter``). Indexes whose options
    /// changed are built or dropped when the event is applied.
    case schemaChanged(schema: SchemaID, text: String, reason: SchemaChangeReason)
    /// Development grew just in time: record type `recordType` gained `fields` (a new
    /// type comes with its system fields; each new field is its own event). Fields the
    /// schema already declares are left as they are.
    case schemaExtended(schema: SchemaID, recordType: String, fields: [FieldSchema])
    /// `user`'s custom security roles in a container environment are now `roles`
    /// (sorted; empty removes them all).
    case rolesAssigned(schema: SchemaID, user: String, roles: [String])
    /// A leader began writing in `epoch`: the first commit it makes after it
    /// won an election or was promoted. Where each epoch began is what lets every node
    /// tell a token from a superseded leader's fork (it points past the end of its
    /// epoch) from one it can serve.
    case epochBegan(epoch: UInt64)
    /// A share in `database` (its owner's private database) was created or changed:
    /// its participants, their acceptance, its public permission. Logged in
    /// the commit that saves the share record, or alone when a participant accepts or
    /// leaves, so every node orders access changes with the records they govern.
    case shareSaved(database: DatabaseID, share: Share)
    /// The share `recordName` in `zoneID` was deleted: its participants lose access.
    case shareDeleted(database: DatabaseID, zoneID: ZoneID, recordName: String)

    /// The event as it is stored: a saved record's client-side `changedKeys` cleared
    /// and the event's changed keys sorted (by UTF-8 bytes) and unique — what reading
    /// the commit back returns.
    public var canonical: Event {
        guard case .recordSaved(let database, var record, let changedKeys) = self else { return self }
        record.clearChangedKeys()
        let keys = UTF8Order.sortedUnique(changedKeys)
        return .recordSaved(database: database, record: record, changedKeys: keys)
    }

    /// The schema the event changes, if it is a schema or role event.
    public var schemaID: SchemaID? {
        switch self {
        case .schemaChanged(let schema, _, _), .schemaExtended(let schema, _, _), .rolesAssigned(let schema, _, _):
            schema
        default:
            nil
        }
    }

    /// The database the event changes, if any (a dictionary belongs to the log, a
    /// schema to a container environment).
    public var database: DatabaseID? {
        switch self {
        case .recordSaved(let database, _, _), .recordDeleted(let database, _, _, _),
            .changeTagBumped(let database, _, _, _), .zoneSaved(let database, _), .zoneDeleted(let database, _),
            .subscriptionSaved(let database, _, _), .subscriptionDeleted(let database, _),
            .shareSaved(let database, _), .shareDeleted(let database, _, _):
            database
        case .dictionaryInstalled, .schemaChanged, .schemaExtended, .rolesAssigned, .epochBegan:
            nil
        }
    }

    /// The zone whose change feed the event belongs in, if any.
    public var zoneID: ZoneID? {
        switch self {
        case .recordSaved(_, let record, _): record.recordID.zoneID
        case .recordDeleted(_, let id, _, _), .changeTagBumped(_, let id, _, _): id.zoneID
        case .zoneSaved(_, let zone): zone.zoneID
        case .zoneDeleted(_, let zoneID): zoneID
        // Share events change who sees a zone, not its records: they are in no zone's
        // feed (the share record's own save is).
        case .subscriptionSaved, .subscriptionDeleted, .dictionaryInstalled, .schemaChanged, .schemaExtended,
            .rolesAssigned, .epochBegan, .shareSaved, .shareDeleted:
            nil
        }
    }

    /// The record the event is about, if any.
    public var recordID: RecordID? {
        switch self {
        case .recordSaved(_, let record, _): record.recordID
        case .recordDeleted(_, let id, _, _), .changeTagBumped(_, let id, _, _): id
        default: nil
        }
    }
}
