import CumulusModel

/// What saving a record derives from its content alone — type, name, user fields
/// and parent — under one schema: the user fields' index keys, the words of its
/// SEARCHABLE fields and its outgoing references.
///
/// That is the costly part of a save's view work (tokenizing and sorting words,
/// building index keys), and none of it waits for the writer: the server's system
/// fields (times, creator, change tag) and the views' state do not enter it. So the
/// engine makes it on the caller's task, from the record as the client sent it
/// (``Views/deriveContent(of:in:schema:)``), and the writer completes it with the
/// system fields (``RecordDerivation/init(_:completing:zoneKey:schema:)``) only if
/// the record it saves has exactly that content. A follower or a replay makes both
/// halves ahead from the log (``Views/derive(_:in:)``), and a record with no
/// derivation is derived whole when applied: the views are the same, byte for byte.
public struct ContentDerivation: Sendable {
    /// The schema it was derived under (``StampedSchema``).
    let schemaStamp: UInt64
    /// The user fields' index keys, sorted and unique (``IndexKeys/fieldEntries(of:zoneKey:schema:user:system:)``).
    let userFieldEntries: [[UInt8]]
    /// ``PendingTokens/words(of:schema:)``.
    let words: [UInt8]
    /// ``OutgoingReference/of(_:)``: user fields and parent.
    let references: [OutgoingReference]

    /// Derives the content of `record`, saved in the zone `zoneKey`, under `schema`.
    init(_ record: Record, zoneKey: [UInt8], schema: StampedSchema) {
        schemaStamp = schema.stamp
        userFieldEntries = IndexKeys.fieldEntries(of: record, zoneKey: zoneKey, schema: schema.schema, system: false)
        words = PendingTokens.words(of: record, schema: schema.schema)
        references = OutgoingReference.of(record)
    }
}
