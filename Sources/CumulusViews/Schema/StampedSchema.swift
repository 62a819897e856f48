import CumulusModel

/// A schema with a stamp that names the stored bytes it was parsed from
/// (``SchemaCatalog``): two lookups that return the same stamp returned the same
/// schema, so work derived under one (``ContentDerivation``, ``RecordDerivation``)
/// is valid under the other without comparing schemas.
public struct StampedSchema: Sendable {
    /// The schema's rules.
    public let schema: EffectiveSchema
    /// Unique to the bytes it was parsed from, within this process.
    public let stamp: UInt64
}
