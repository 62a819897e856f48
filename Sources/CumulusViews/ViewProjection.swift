/// The projections the views are made of, one per folder of this module: each derives
/// its tables from the log's events and owns them (``ViewTables/Name/projection``):
/// only its own code in its folder writes them; any projection may read another's.
///
/// `Views.apply(_:derived:in:)` hands every event to the projections it concerns in
/// a fixed order, the same for the writer, a follower, a rebuild and a replay. Within
/// a record's save the order is records (which reads the version replaced), then
/// references, assets and usage; a subscription is matched before the event
/// changes anything, as it compares the state before with after.
public enum ViewProjection: String, Sendable, CaseIterable {
    /// `Records/`: current records, records by type, the field and token indexes, the
    /// staged and kept token sides.
    case records
    /// `References/`: the reference graph, both directions.
    case references
    /// `Assets/`: how many current records hold each asset file, and which a record holds.
    case assets
    /// `Usage/`: the bytes current records hold, per payer and per container.
    case usage
    /// `Zones/`: zone definitions and incarnations, client change tokens.
    case zones
    /// `Subscriptions/`: subscriptions, what could fire them, and the notifications they made.
    case subscriptions
    /// `Schema/`: schemas, role assignments, the zones of each container environment.
    case schema
    /// `Shares/`: shares, their short GUIDs, and the zones in each user's shared database.
    case shares

    /// The tables the projection owns.
    public var tables: [ViewTables.Name] { ViewTables.Name.allCases.filter { $0.projection == self } }
}
