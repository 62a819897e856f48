import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation

/// A Cumulus data directory opened for use: the log, its views and the single
/// writer, shared by every database of every container it hosts.
///
/// Open a directory once per process (LMDB's rule); share the `Container` between
/// tasks — it is `Sendable`. ``database(_:)`` hands out cheap handles to
/// individual databases; writes from all of them go through the one group-commit
/// writer, reads take their own snapshots.
public final class Container: Sendable {
    /// The data directory.
    public let path: String
    /// The log.
    public let store: LogStore
    /// The views kept in step with it.
    public let views: Views
    /// The writer.
    public let writer: LogWriter
    /// 32 random bytes made when the directory was created: the key that
    /// authenticates query cursors and change tokens this server issues.
    let secret: [UInt8]
    /// Deletes `firesOnce` subscriptions once they have fired (``FiredOnceReaper``).
    private let reaper: Task<Void, Never>?

    /// Opens (creating if needed) the data directory at `path`.
    public init(path: String, environmentOptions: LMDBEnvironment.Options = .init(), writerOptions: LogWriter.Options = .init())
        throws
    {
        self.path = path
        let environment = try LMDBEnvironment(path: path, options: environmentOptions)
        let store = try LogStore(environment: environment)
        self.store = store
        let views = try Views(environment: environment)
        self.views = views
        secret = try Self.loadSecret(environment)
        let writer = LogWriter(store: store, options: writerOptions) { commit, txn in
            try views.apply(commit, in: txn)
        }
        self.writer = writer
        // It captures the parts, not the container, so the container can still go away.
        reaper = environmentOptions.readOnly
            ? nil : Task.detached { await FiredOnceReaper.run(store: store, views: views, writer: writer) }
    }

    private static func loadSecret(_ environment: LMDBEnvironment) throws -> [UInt8] {
        let table = try environment.table("secrets")
        let key = Array("server".utf8)
        if let existing = try environment.read({ try $0.get(table, key: key) }), existing.count == 32 { return existing }
        guard !environment.options.readOnly else { throw CumulusError(.internalError, "the data directory has no server secret") }
        return try environment.write { txn in
            if let existing = try txn.get(table, key: key), existing.count == 32 { return existing }
            var random = SystemRandomNumberGenerator()
            let secret = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            try txn.put(table, key: key, value: secret)
            return secret
        }
    }

    /// A handle to one database.
    public func database(_ id: DatabaseID) -> Database {
        Database(id: id, container: self)
    }

    /// The public database of `container` in `environment`.
    public func publicDatabase(container: String, environment: DatabaseID.Environment = .development) -> Database {
        database(DatabaseID(container: container, environment: environment, scope: .public))
    }

    /// The private database of `user` in `container`.
    public func privateDatabase(
        container: String, user: String, environment: DatabaseID.Environment = .development
    ) -> Database {
        database(DatabaseID(container: container, environment: environment, scope: .private, owner: user))
    }

    /// The shared database of `user` in `container`.
    public func sharedDatabase(
        container: String, user: String, environment: DatabaseID.Environment = .development
    ) -> Database {
        database(DatabaseID(container: container, environment: environment, scope: .shared, owner: user))
    }

    /// Drops every view and replays the log into them.
    @discardableResult
    public func rebuild(progress: ((UInt64) -> Void)? = nil) throws -> UInt64 {
        try ViewRebuilder.rebuild(views, from: store, progress: progress)
    }

    /// Rebuilds the views from the log in a scratch directory and compares them with
    /// the live ones; checks the hash chain.
    public func verify(progress: ((String, UInt64) -> Void)? = nil) throws -> ViewVerifier.Report {
        try ViewVerifier.verify(views, store: store, progress: progress)
    }

    /// Finishes queued writes and stops the writer. Also done when the container
    /// goes away; the environment closes when the last reference to it does.
    public func close() {
        reaper?.cancel()
        writer.close()
    }

    deinit {
        reaper?.cancel()
        writer.close()
    }
}
