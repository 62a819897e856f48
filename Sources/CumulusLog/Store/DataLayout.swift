import CumulusStorage

/// The tables of a data directory that are not views, by name, and the server secret
/// kept in one of them (`Docs/LOG-FORMAT.md` §9 gives each table's bytes). The views'
/// tables are named where they are owned, by `CumulusViews`' `ViewTables.Name`: this
/// module knows the log, not what is projected from it.
///
/// A data directory is one LMDB environment. Its tables fall in four groups:
/// - **the log** (``Table/log``, ``Table/meta``, ``Table/dictionaries``, the feed
///   indexes and ``Table/recordHistory``): the truth, and indexes of it kept in the
///   transaction that appends each commit;
/// - **configuration** that is not a log event (``Table/auth``, ``Table/secrets``):
///   copied whole to followers, replays and checkpoints (``configurationTables``);
/// - **node state** (``Table/webCourier``): what this node remembers of its own
///   clients, neither derived nor replicated — losing it costs a client repeats,
///   never a loss;
/// - **views** (records, references, query indexes, zones, subscriptions,
///   notifications, schemas, asset reference counts, bytes held per user): derived
///   from the log, dropped and rebuilt at will; named by `ViewTables.Name`.
///
/// Asset files are not in the environment: they sit beside it in `assets/`
/// (``assetDirectoryName``; `Docs/LOG-FORMAT.md` §16).
public enum DataLayout {
    /// A table's name in the environment.
    public enum Table: String, Sendable, CaseIterable {
        // The log.
        case log
        case meta
        case dictionaries
        case zoneFeed
        case zoneHeads
        case databaseFeed = "dbFeed"
        case databaseHeads = "dbHeads"
        case recordHistory
        // Configuration.
        case auth
        case secrets
        // Node state.
        case webCourier

        /// LMDB flags the table is created with.
        public var options: LMDBTable.Options { [] }
    }

    /// The directory beside the LMDB files holding a data directory's asset files.
    public static let assetDirectoryName = "assets"

    /// Configuration tables a follower, a replay and a checkpoint copy whole, in order.
    public static let configurationTables: [Table] = [.auth, .secrets]

    /// Opens (creating, unless the environment is read-only) `table` in `environment`.
    /// Call outside any transaction, as LMDB requires.
    public static func open(_ table: Table, in environment: LMDBEnvironment) throws -> LMDBTable {
        try environment.table(table.rawValue, options: table.options)
    }

    /// The `meta` key a replayed copy (`cumulus replay`, a checkpoint) records the
    /// last sequence it replayed under; a data directory without it is a live one.
    public static let replayedThroughKey: [UInt8] = Array("replayedThrough".utf8)

    // MARK: - The server secret

    /// The key of the server secret in ``Table/secrets``.
    public static let serverSecretKey: [UInt8] = Array("server".utf8)
    /// The server secret's length in bytes.
    public static let serverSecretLength = 32

    /// The stored server secret (32 random bytes that authenticate the cursors and
    /// change tokens this data directory issues), or `nil` if it has none yet.
    public static func serverSecret(in txn: LMDBReadTransaction, _ secrets: LMDBTable) throws -> [UInt8]? {
        guard let stored = try txn.get(secrets, key: serverSecretKey), stored.count == serverSecretLength else {
            return nil
        }
        return stored
    }

    /// The server secret of `environment`, made and stored first if it has none
    /// (a read-only environment without one is an error).
    public static func loadOrCreateServerSecret(in environment: LMDBEnvironment) throws -> [UInt8] {
        let secrets = try open(.secrets, in: environment)
        if let existing = try environment.read({ try serverSecret(in: $0, secrets) }) { return existing }
        guard !environment.options.readOnly else {
            throw LogError.storage("the data directory \(environment.path) has no server secret")
        }
        return try environment.write { txn in
            if let existing = try serverSecret(in: txn, secrets) { return existing }
            let secret = randomSecret()
            try txn.put(secrets, key: serverSecretKey, value: secret)
            return secret
        }
    }

    /// Stores a fresh server secret in `txn` unless one is there.
    public static func ensureServerSecret(in txn: LMDBWriteTransaction, _ secrets: LMDBTable) throws {
        guard try serverSecret(in: txn, secrets) == nil else { return }
        try txn.put(secrets, key: serverSecretKey, value: randomSecret())
    }

    private static func randomSecret() -> [UInt8] {
        var random = SystemRandomNumberGenerator()
        return (0..<serverSecretLength).map { _ in UInt8.random(in: 0...255, using: &random) }
    }
}
