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
/// It is made in two halves: the ``ContentDerivation`` (the costly half, which
/// follows from what a client sent) and the system fields' part, which follows from
/// what the server set. The leader's writer gets the first half made on the
/// caller's task and makes the second itself.
///
/// A derivation carries the stamp of the schema it was made under
/// (``StampedSchema``). The writer uses it only if that is still the schema in
/// force when the record is applied; after a schema change earlier in the same
/// batch it derives again, inline, so the views come out byte for byte as without
/// derivations.
struct RecordDerivation: Sendable {
    /// The schema it was derived under.
    let schemaStamp: UInt64
    /// ``IndexKeys/fieldEntries(of:zoneKey:schema:user:system:)``, user and system fields.
    let fieldEntries: [[UInt8]]
    /// ``PendingTokens/side(of:schema:)``.
    let tokenSide: [UInt8]
    /// ``OutgoingReference/of(_:)``.
    let references: [OutgoingReference]
    /// The record as the `records` table stores it.
    let stored: [UInt8]

    /// Derives what saving `record` in the zone `zoneKey` writes under `schema`.
    init(_ record: Record, zoneKey: [UInt8], schema: StampedSchema) throws {
        try self.init(ContentDerivation(record, zoneKey: zoneKey, schema: schema), completing: record, zoneKey: zoneKey, schema: schema.schema)
    }

    /// Completes `content`, made from `record`'s content under `schema`, with what
    /// `record`'s system fields add.
    init(_ content: ContentDerivation, completing record: Record, zoneKey: [UInt8], schema: EffectiveSchema) throws {
        schemaStamp = content.schemaStamp
        let system = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema, user: false)
        fieldEntries = content.userFieldEntries.isEmpty
            ? system : IndexKeys.sortedUnique(content.userFieldEntries + system)
        tokenSide = PendingTokens.side(of: record, words: content.words)
        references = content.references
        stored = try Self.stored(record)
    }

    /// What applying the save of `record` in the zone `zoneKey` uses of the work done
    /// `ahead`: a whole derivation, or a content one completed here, when made under
    /// `schema`, the schema in force; `nil` (derive while applying) otherwise.
    static func usable(
        _ ahead: CommitDerivations.Ahead?, completing record: Record, zoneKey: [UInt8], schema: StampedSchema
    ) throws -> RecordDerivation? {
        switch ahead {
        case .whole(let whole) where whole.schemaStamp == schema.stamp: whole
        case .content(let content) where content.schemaStamp == schema.stamp:
            try RecordDerivation(content, completing: record, zoneKey: zoneKey, schema: schema.schema)
        default: nil
        }
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
    /// One event's work done ahead: whole (a follower, a replay) or its content
    /// only (the leader, from the request).
    enum Ahead: Sendable {
        case whole(RecordDerivation)
        case content(ContentDerivation)
    }

    let events: [Ahead?]

    /// Whole derivations, by event.
    init(events: [RecordDerivation?]) {
        self.events = events.map { $0.map(Ahead.whole) }
    }

    /// Content derivations made from a request's records (``Views/deriveContent(of:in:schema:)``),
    /// by the position of each record's save among `events`.
    public init(contents: [ContentDerivation?]) {
        self.events = contents.map { $0.map(Ahead.content) }
    }

    /// The work done ahead for the event at `index`, if any.
    func derivation(at index: Int) -> Ahead? {
        index < events.count ? events[index] : nil
    }
}
