import CumulusLog
import CumulusStorage

/// The LMDB tables holding the views, and their names: the one place a view table is
/// named (the log's own tables are `DataLayout`'s). All are derived from the log and
/// can be cleared and rebuilt; `Docs/LOG-FORMAT.md` §9 gives their layout.
public struct ViewTables: Sendable {
    /// A view table's name in the environment.
    public enum Name: String, Sendable, CaseIterable {
        case records
        case refsIn
        case refsOut
        case byType
        case zones
        case subscriptions
        case fieldIndex
        case tokenIndex
        case tokenPending
        case clientTokens
        case subscriptionIndex
        case subscriptionsFired
        case subscriptionState
        case notifications
        case notificationHeads
        case schemas
        case userRoles
        case schemaZones
        case shares
        case shareGUIDs
        case sharedZones
        case assetRefs
        case assetsOut
        case usage

        /// The projection that owns the table: the only one that writes it.
        public var projection: ViewProjection {
            switch self {
            case .records, .byType, .fieldIndex, .tokenIndex, .tokenPending: .records
            case .refsIn, .refsOut: .references
            case .assetRefs, .assetsOut: .assets
            case .usage: .usage
            case .zones, .clientTokens: .zones
            case .subscriptions, .subscriptionIndex, .subscriptionsFired, .subscriptionState, .notifications,
                .notificationHeads:
                .subscriptions
            case .schemas, .userRoles, .schemaZones: .schema
            case .shares, .shareGUIDs, .sharedZones: .shares
            }
        }

        /// Whether every key starts with the zone key of the zone it belongs to, so that
        /// deleting a zone drops the range (``Views/dropZoneEntries(of:zoneKey:_:)``).
        public var isZoneScoped: Bool {
            switch self {
            case .records, .byType, .fieldIndex, .tokenIndex, .tokenPending, .refsIn, .refsOut, .assetsOut,
                .clientTokens:
                true
            default: false
            }
        }

        /// LMDB flags the table is created with.
        public var options: LMDBTable.Options {
            self == .refsIn ? .dupSort : []
        }

        /// How the table keeps postings in blocks, or `nil` for plain entries: the
        /// token index, whose logical keys are zoneKey(16) ‖ typeHash(8) ‖ escaped word
        /// ‖ `00 00` (the group, one word of one type) ‖ created(8) ‖ record name.
        public var postings: PostingLayout? {
            self == .tokenIndex ? PostingLayout(groupStart: 24) : nil
        }

        /// Opens (creating, unless the environment is read-only) the table in
        /// `environment`. Call outside any transaction, as LMDB requires.
        public func open(in environment: LMDBEnvironment) throws -> LMDBTable {
            try environment.table(rawValue, options: options, postings: postings)
        }
    }

    /// zone key ‖ record name → the record (RecordCodec).
    public let records: LMDBTable
    /// zone key ‖ target name → (dup) u8 action ‖ source name: who refers to a record.
    public let refsIn: LMDBTable
    /// zone key ‖ source name → varint n, n × (u8 action, string target): what a record refers to.
    public let refsOut: LMDBTable
    /// zone key ‖ type hash ‖ record name → ``KeptEntries``: the record's current token
    /// side (``PendingTokens``' side layout, length field included) then its field-index
    /// keys cut to field hash ‖ value, or empty for a record with neither: records by
    /// type, and what the indexes hold or will hold for each once merged, kept so an
    /// update, a delete or a cascade finds its entries without decoding and tokenizing
    /// the old version again (FTS5 needs the old text for a delete; this is that text,
    /// cut).
    public let byType: LMDBTable
    /// database key ‖ zone key → u64 incarnation ‖ database ID ‖ zone ID ‖ varint capabilities.
    public let zones: LMDBTable
    /// database key ‖ subscription ID → the subscription's definition.
    public let subscriptions: LMDBTable
    /// Field values for queries (``IndexKeys``) → empty.
    public let fieldIndex: LMDBTable
    /// Full-text tokens for queries (``IndexKeys``) → empty.
    public let tokenIndex: LMDBTable
    /// zone key ‖ record name → ``PendingTokens``: token entries not merged into
    /// `tokenIndex` yet, what it holds for the record and what it should.
    public let tokenPending: LMDBTable
    /// zone key ‖ actor → u64 sequence ‖ the client change token data of that
    /// user's latest commit in the zone that carried one (echoed by zone changes).
    public let clientTokens: LMDBTable
    /// ``SubscriptionIndex`` keys (database key ‖ kind ‖ type hash / zone key ‖
    /// subscription ID) → empty: which subscriptions a record event could fire.
    public let subscriptionIndex: LMDBTable
    /// database key ‖ subscription ID → u64 commit sequence ‖ database ID ‖ subscription
    /// ID: `firesOnce` subscriptions that fired and await their logged deletion.
    public let subscriptionsFired: LMDBTable
    /// database key ‖ subscription ID → u64 sequence of the last commit that fired it.
    public let subscriptionState: LMDBTable
    /// user key ‖ u64 per-user sequence → the notification (``NotificationCodec``).
    public let notifications: LMDBTable
    /// user key → u64 the user's last notification sequence.
    public let notificationHeads: LMDBTable
    /// ``SchemaCatalog/key(_:)`` → the schema's canonical text (``SchemaPrinter``).
    public let schemas: LMDBTable
    /// ``SchemaCatalog/key(_:)`` ‖ user record name → varint n, n × string: custom roles.
    public let userRoles: LMDBTable
    /// ``SchemaCatalog/key(_:)`` ‖ zone key → empty: the zones that ever held records
    /// of a container environment, so an index change can find every record of a type.
    public let schemaZones: LMDBTable
    /// zone key ‖ share record name → the share (``ShareCodec``): who may see what of
    /// the zone (`Docs/DATA-MODEL.md`, "Sharing").
    public let shares: LMDBTable
    /// short GUID → database ID ‖ zone ID ‖ string share record name: how
    /// `records/accept` and `records/resolve` find a share.
    public let shareGUIDs: LMDBTable
    /// participant key (the database key of the user's shared database) ‖ zone key →
    /// u64 commit sequence ‖ u8 status (1 accepted, 2 removed) ‖ u8 permission ‖
    /// database ID ‖ zone ID: the zones in a user's shared database, and when their
    /// access to each last changed (what database changes report).
    public let sharedZones: LMDBTable
    /// [32] asset checksum → u64 count of current records holding it ‖ u64 sequence of
    /// the last commit that saved a record version holding it (``Views/assetReferences(_:in:)``).
    public let assetRefs: LMDBTable
    /// zone key ‖ record name → n × ([32] checksum ‖ u64 size), by checksum ascending:
    /// the assets a current record holds (only records holding any), so its next save
    /// or delete, or its zone's deletion, knows what to count down and how many bytes
    /// it held.
    public let assetsOut: LMDBTable
    /// ``RecordUsage`` keys (string container ‖ user, or string container alone) → u64
    /// bytes: what the current records of one payer, and of one container, hold
    /// (stored bytes and the assets they hold), for the record quotas.
    public let usage: LMDBTable

    /// Opens (creating) the view tables of `environment`.
    public init(environment: LMDBEnvironment) throws {
        func open(_ name: Name) throws -> LMDBTable { try name.open(in: environment) }
        records = try open(.records)
        refsIn = try open(.refsIn)
        refsOut = try open(.refsOut)
        byType = try open(.byType)
        zones = try open(.zones)
        subscriptions = try open(.subscriptions)
        fieldIndex = try open(.fieldIndex)
        tokenIndex = try open(.tokenIndex)
        tokenPending = try open(.tokenPending)
        clientTokens = try open(.clientTokens)
        subscriptionIndex = try open(.subscriptionIndex)
        subscriptionsFired = try open(.subscriptionsFired)
        subscriptionState = try open(.subscriptionState)
        notifications = try open(.notifications)
        notificationHeads = try open(.notificationHeads)
        schemas = try open(.schemas)
        userRoles = try open(.userRoles)
        schemaZones = try open(.schemaZones)
        shares = try open(.shares)
        shareGUIDs = try open(.shareGUIDs)
        sharedZones = try open(.sharedZones)
        assetRefs = try open(.assetRefs)
        assetsOut = try open(.assetsOut)
        usage = try open(.usage)
    }

    /// The table named `name`.
    public func table(_ name: Name) -> LMDBTable {
        switch name {
        case .records: records
        case .refsIn: refsIn
        case .refsOut: refsOut
        case .byType: byType
        case .zones: zones
        case .subscriptions: subscriptions
        case .fieldIndex: fieldIndex
        case .tokenIndex: tokenIndex
        case .tokenPending: tokenPending
        case .clientTokens: clientTokens
        case .subscriptionIndex: subscriptionIndex
        case .subscriptionsFired: subscriptionsFired
        case .subscriptionState: subscriptionState
        case .notifications: notifications
        case .notificationHeads: notificationHeads
        case .schemas: schemas
        case .userRoles: userRoles
        case .schemaZones: schemaZones
        case .shares: shares
        case .shareGUIDs: shareGUIDs
        case .sharedZones: sharedZones
        case .assetRefs: assetRefs
        case .assetsOut: assetsOut
        case .usage: usage
        }
    }

    /// Every view table, in ``Name``'s order (fixed: rebuild and digests walk it).
    public var all: [LMDBTable] { Name.allCases.map(table(_:)) }
}
