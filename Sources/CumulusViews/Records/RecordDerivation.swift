import CumulusLog
import CumulusModel

/// What saving one record writes that follows from the record alone, under one
/// schema: its field index keys, its token side (``PendingTokens``), its outgoing
/// references and its stored bytes.
///
/// None of it depends on what the views hold, so a batch's derivations can be made
/// on another thread while the writer applies the batch before it
/// (``Views/derive(_:in:)``). In a replay's profile these were about half of the
/// writer's time — tokenizing and sorting each record's words, building its index
/// keys, encoding it — and the rest (reading the old state, writing) has to stay on
/// the writer's thread.
///
/// A derivation carries the stamp of the schema it was made under
/// (``SchemaCatalog/Stamped``). The writer uses it only if that is still the schema
/// in force when the record is applied; after a schema change earlier in the same
/// batch it derives again, inline, so the views come out byte for byte as without
/// derivations.
struct RecordDerivation: Sendable {
    /// The schema it was derived under.
    let schemaStamp: UInt64
    /// ``IndexKeys/fieldEntries(of:zoneKey:schema:)``.
    let fieldEntries: [[UInt8]]
    /// ``PendingTokens/side(of:schema:)``.
    let tokenSide: [UInt8]
    /// ``OutgoingReference/of(_:)``.
    let references: [OutgoingReference]
    /// The record as the `records` table stores it.
    let stored: [UInt8]

    /// Derives what saving `record` in the zone `zoneKey` writes under `schema`.
    init(_ record: Record, zoneKey: [UInt8], schema: SchemaCatalog.Stamped) throws {
        schemaStamp = schema.stamp
        fieldEntries = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema.schema)
        tokenSide = PendingTokens.side(of: record, schema: schema.schema)
        references = OutgoingReference.of(record)
        stored = try Self.stored(record)
    }

    /// The bytes the `records` table stores for `record`: the one place a view's
    /// record is encoded, with or without a derivation.
    static func stored(_ record: Record) throws -> [UInt8] {
        var stored = record
        stored.clearChangedKeys()
        return try RecordCodec.encode(stored)
    }
}

/// The derivations of one commit's events, by position: `nil` for an event that is
/// not a record save, or that could not be derived ahead (it is derived when applied).
public struct CommitDerivations: Sendable {
    let events: [RecordDerivation?]

    /// The derivation of the event at `index`, if any.
    func derivation(at index: Int) -> RecordDerivation? {
        index < events.count ? events[index] : nil
    }
}
