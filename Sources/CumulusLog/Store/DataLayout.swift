import CumulusStorage

/// The tables of a data directory that are not views, by name, and the server secret
/// kept in one of them (`Docs/LOG-FORMAT.md` §9 gives each table's bytes). The views'
/// tables are named where they are owned, by `CumulusViews`' `ViewTables.Name`: this
/// module knows the log, not what is projected from it.
///
/// A data directory is two LMDB environments (``Home``):
/// - **the log environment** (`DATA/log/`, durable: fsynced once per commit group
///   before any caller is answered) holds what must survive a crash of the machine:
///   - **the log** (``Table/log``, ``Table/meta``, ``Table/dictionaries``): frames,
///     the head, epochs, and where the views were last made durable;
///   - **configuration** that is not a log event (``Table/auth``, ``Table/secrets``):
///     copied whole to followers, replays and checkpoints (``configurationTables``);
///   - **node state** (``Table/webCourier``): what this node remembers of its own
///     clients, neither derived nor replicated — losing it costs a client repeats,
///     never a loss;
/// - **the views environment** (`DATA/`, committed without fsync) holds everything
///   derived from the log, which a crash of the machine may tear and the log can
///   make again: the feed indexes, ``Table/recordHistory``, ``Table/viewsState`` (the
///   commit the views have applied) and the views themselves (records, references,
///   query indexes, zones, subscriptions, notifications, schemas, asset reference
///   counts, bytes held per user), named by `ViewTables.Name`.
///
/// Asset files are not in either environment: they sit beside them in `assets/`
/// (``assetDirectoryName``; `Docs/LOG-FORMAT.md` §16).
public enum DataLayout {
    /// Which environment of a data directory holds a table.
    public enum Home: Sendable {
        /// `DATA/log/`: durable on every commit group.
        case log
        /// `DATA/`: derived, committed without fsync, made durable by views syncs.
        case views
    }

    /// A table's name in its environment.
    public enum Table: String, Sendable, CaseIterable {
        // The log.
        case log
        case meta
        case dictionaries
        // Indexes of the log, derived (in the views environment).
        case zoneFeed
        case zoneHeads
        case databaseFeed = "dbFeed"
        case databaseHeads = "dbHeads"
        case recordHistory
        case viewsState
        // Configuration.
        case auth
        case secrets
        // Node state.
        case webCourier

        /// LMDB flags the table is created with.
        public var options: LMDBTable.Options { [] }

        /// The environment the table lives in.
        public var home: Home {
            switch self {
            case .log, .meta, .dictionaries, .auth, .secrets, .webCourier: .log
            case .zoneFeed, .zoneHeads, .databaseFeed, .databaseHeads, .recordHistory, .viewsState: .views
            }
        }
    }

    /// The log environment's directory inside a data directory (the views environment
    /// is the data directory itself).
    public static let logDirectoryName = "log"

    /// The log environment's path for the data directory (views environment) at `path`.
    public static func logPath(_ path: String) -> String {
        (path.hasSuffix("/") ? path : path + "/") + logDirectoryName
    }

    /// The tables the log environment holds, in the order an upgrade copies them
    /// (``Table/meta`` last: its log ID marks the copy complete).
    public static let logTables: [Table] = Table.allCases.filter { $0.home == .log && $0 != .meta } + [.meta]

    /// The directory beside the LMDB files holding a data directory's asset files.
    public static let assetDirectoryName = "assets"

    /// Configuration tables a follower, a replay and a checkpoint copy whole, in order.
    public static let configurationTables: [Table] = [.auth, .secrets]

    /// Opens (creating, unless the environment is read-only) `table` in `environment`.
    /// Call outside any transaction, as LMDB requires.
    /// Refuses a table opened in the other environment of its data directory, where it
    /// would be made empty (and, for the log's, not durable).
    public static func open(_ table: Table, in environment: LMDBEnvironment) throws -> LMDBTable {
        guard isLogEnvironment(environment) == (table.home == .log) else {
            throw LogError.storage("table \(table.rawValue) belongs to the \(table.home) environment, not \(environment.path)")
        }
        return try environment.table(table.rawValue, options: table.options)
    }

    /// Whether `environment` is a data directory's log environment (at `DATA/log`).
    public static func isLogEnvironment(_ environment: LMDBEnvironment) -> Bool {
        var path = Substring(environment.path)
        while path.hasSuffix("/") { path = path.dropLast() }
        return path == Substring(logDirectoryName) || path.hasSuffix("/" + logDirectoryName)
    }

    /// The log environment of the data directory whose views environment is `views`,
    /// opened with the same options. Open it once per process, like any environment.
    public static func openLogEnvironment(of views: LMDBEnvironment) throws -> LMDBEnvironment {
        try LMDBEnvironment(path: logPath(views.path), options: views.options)
    }

    /// The `viewsState` key a replayed copy (`cumulus replay`, a checkpoint) records the
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
