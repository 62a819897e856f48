import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation
import Synchronization

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
    /// Each change of this node's role, when and why (``NodeHistory``).
    public let history: NodeHistory
    /// Makes the views durable now and then (`nil` on a read-only directory).
    public let viewsSyncer: ViewsSyncer?
    /// What opening did with the views (``LogStore/open(path:options:)``): kept them,
    /// or, found torn by a crash of the machine, made them again from the log, from
    /// the first commit or from the last views snapshot.
    public let openedViews: LogStore.OpenedViews
    /// Whether opening found the views torn and made them again (``openedViews``).
    public var viewsRemade: Bool { openedViews != .kept }
    /// The asset files beside the LMDB files (`DATA/assets`).
    public let assets: AssetStore
    /// Upload URLs used and bytes uploaded lately, for one use per URL and the upload quotas.
    public let uploads = UploadLedger()
    /// How far each web client's push token has read its notifications, on this node.
    let webCourier: WebCourierPositions
    /// 32 random bytes made when the directory was created: the key that
    /// authenticates query cursors and change tokens this server issues.
    let secret: [UInt8]
    /// Whether this node leads — takes writes in its epoch, unless it was superseded —
    /// and the task that deletes `firesOnce` subscriptions once they have fired
    /// (``FiredOnceReaper``), which only a leader runs. What the node is beyond that
    /// (a follower of which leader, a cluster member waiting for an election) the
    /// node decides (`CumulusReplication/Node`); the engine only enforces it.
    private let stance: Mutex<Stance>
    private struct Stance {
        var leads: Bool
        var reaper: Task<Void, Never>?
    }
    /// Whether the environment was opened for writing (a read-only one never leads).
    private let writable: Bool
    private let superseded: Mutex<UInt64?>

    /// Whether this node was opened or made to lead (``lead(epoch:)``) and has not been
    /// told to refuse writes since (``refuseWrites(_:)``). A leader superseded by a
    /// newer epoch still leads by this flag, but takes no writes (``supersededBy``).
    public var leads: Bool { stance.withLock { $0.leads } }

    /// Whether a write would be let in now: this node leads and nothing refuses it
    /// (a follower's directory, a newer epoch).
    public var takesWrites: Bool { writer.gate.refusal == nil }

    /// Opens (creating if needed) the data directory at `path`, leading unless
    /// `refusingWrites` says why it takes none (a follower, a node waiting for its
    /// cluster's election) or the directory is read-only, a follower's or superseded;
    /// only a leader runs the `firesOnce` reaper (a follower gets the leader's
    /// deletions through the log). `indexBuildObserver` hears of index builds a schema
    /// change causes (``Views/indexBuildObserver``), for progress on a terminal;
    /// `history` is where the node records its changes of role (one per process,
    /// kept across the containers a rejoining node opens). `catchUpObserver` hears how far views found
    /// behind the log have caught up, and
    /// `migrationObserver` how many records views of the layout before were migrated
    /// through in place (``ViewMigration``).
    /// Views a crash of the machine may have torn are never opened but made again from
    /// the log (``viewsRemade``); `viewsSync` says how often the views are made durable.
    public init(
        path: String, environmentOptions: LMDBEnvironment.Options = .init(), writerOptions: LogWriter.Options = .init(),
        refusingWrites: CumulusError? = nil, viewsSync: ViewsSyncer.Policy = .init(),
        indexBuildObserver: (@Sendable (SchemaID, String, Int) -> Void)? = nil, catchUpObserver: ((UInt64) -> Void)? = nil,
        migrationObserver: ((Int) -> Void)? = nil, history: NodeHistory = NodeHistory()
    ) throws {
        self.path = path
        writable = !environmentOptions.readOnly
        let (store, opened) = try LogStore.open(path: path, options: environmentOptions)
        self.store = store
        openedViews = opened
        let views = try Views(environment: store.environment, indexBuildObserver: indexBuildObserver)
        self.views = views
        assets = try AssetStore(dataDirectory: path)
        webCourier = try WebCourierPositions(environment: store.logEnvironment)
        // Views behind the log (a crash between the log's commit and theirs, views made
        // afresh) catch up, then views of an older layout are rebuilt, before anything
        // reads them.
        if writable {
            // Views made afresh (new, or remade after a crash) are made by this build's
            // apply from the first commit: of the current layout, with nothing to upgrade.
            if store.viewsMadeAfresh { try ViewRebuilder.markCurrent(store.environment) }
            // Views one layout step behind are brought up to it in place before they
            // apply anything: this build's apply relies on what the step adds.
            try ViewMigration.migrateIfNeeded(views, in: store.environment, progress: migrationObserver)
            // Each batch's derivations are made on the other core while the one before is
            // applied, as a replay's are (`Views.derive`).
            let environment = store.environment
            try store.catchUpViews(
                prepare: { batch in try environment.read { views.derive(batch, in: $0) } },
                applying: { commit, index, derived, txn in
                    try views.apply(commit, derived: index < derived.count ? derived[index] : nil, in: txn)
                }, progress: catchUpObserver)
        }
        try ViewRebuilder.upgradeIfNeeded(views, from: store)
        // The views as opened are made durable, and the boot they are used in recorded,
        // before any write: from here on a crash of the machine is told apart.
        let syncer = writable ? ViewsSyncer(store: store, policy: viewsSync, synced: try store.syncViews()) : nil
        self.viewsSyncer = syncer
        var writerOptions = writerOptions
        if let syncer {
            let observer = writerOptions.observer
            writerOptions.observer = { report in
                observer?(report)
                syncer.noteCommits(report.commits)
            }
        }
        secret = try DataLayout.loadOrCreateServerSecret(in: store.logEnvironment)
        let writer = LogWriter(store: store, options: writerOptions) { commit, workAhead, txn in
            try views.apply(commit, derived: workAhead as? CommitDerivations, in: txn)
        }
        self.writer = writer
        let storedSuperseded = store.storedSupersededBy.flatMap { $0 > store.epoch ? $0 : nil }
        superseded = Mutex(storedSuperseded)
        let refusal: CumulusError? =
            if environmentOptions.readOnly {
                CumulusError(.notLeader, "this node serves a read-only data directory; it takes no writes")
            } else if let refusingWrites {
                refusingWrites
            } else if store.isFollowerDirectory {
                // A follower's directory opened as a leader (no --follow, or a maintenance
                // command) still takes no writes: its log would fork from its leader's.
                CumulusError(
                    .notLeader,
                    "this data directory belongs to a follower; start it with --follow LEADER-URL, or `cumulus promote` it first")
            } else {
                storedSuperseded.map { Self.supersededError(store.epoch, by: $0) }
            }
        writer.gate.refuse(refusal)
        // A directory opened to lead runs the reaper unless it is a follower's (one
        // superseded still leads by the flag, and the gate keeps its writes out).
        let leads = refusingWrites == nil && !environmentOptions.readOnly && !store.isFollowerDirectory
        stance = Mutex(Stance(leads: leads, reaper: leads ? Self.startReaper(store, views, writer) : nil))
        self.history = history
    }

    /// It captures the parts, not the container, so the container can still go away.
    private static func startReaper(_ store: LogStore, _ views: Views, _ writer: LogWriter) -> Task<Void, Never> {
        Task.detached { await FiredOnceReaper.run(store: store, views: views, writer: writer) }
    }

    /// Takes writes in `epoch`, newer than the log's (the epoch this node won, or was
    /// promoted to): the epoch is stored and its first commit, which records where it
    /// began, appended — both before any write is let in, so a restart remembers the
    /// epoch and every node learns where it began before any commit of it.
    public func lead(epoch: UInt64) throws {
        guard writable else { throw CumulusError(.notLeader, "a read-only data directory cannot lead") }
        try store.lead(inEpoch: epoch, applying: views.apply)
        superseded.withLock { seen in
            if let newer = seen, newer <= epoch { seen = nil }
        }
        let (store, views, writer) = (self.store, self.views, self.writer)
        stance.withLock { stance in
            stance.leads = true
            if stance.reaper == nil { stance.reaper = Self.startReaper(store, views, writer) }
        }
        writer.gate.refuse(nil)
    }

    /// Stops taking writes, refusing each with `refusal` (which says where to send
    /// them, if this node knows), and stops the work only a leader does.
    public func refuseWrites(_ refusal: CumulusError) {
        writer.gate.refuse(refusal)
        stance.withLock { stance in
            stance.leads = false
            stance.reaper?.cancel()
            stance.reaper = nil
        }
    }

    /// Marks the directory a follower's, so opened on its own later it still takes no
    /// writes (its log may have to give way to its leader's).
    public func markFollower() throws {
        if writable { try store.markFollower() }
    }

    /// Fences a leader that has learned of a newer epoch (a follower or a client
    /// token from it): it takes no more writes, which would fork history. Returns
    /// whether this call fenced it (the first to learn it logs it).
    @discardableResult
    public func supersede(by epoch: UInt64) -> Bool {
        guard epoch > store.epoch else { return false }
        let first = superseded.withLock { seen -> Bool in
            defer { seen = max(seen ?? 0, epoch) }
            return seen == nil
        }
        // Kept on disk, so a restart does not forget it.
        try? store.recordSuperseded(by: epoch)
        writer.gate.refuse(Self.supersededError(store.epoch, by: epoch))
        if first { history.record("superseded", epoch: store.epoch, reason: "learned of a leader in epoch \(epoch)") }
        return first
    }

    static func supersededError(_ epoch: UInt64, by newer: UInt64) -> CumulusError {
        CumulusError(
            .notLeader,
            "this node (epoch \(epoch)) was superseded by a leader in epoch \(newer); it takes no writes — send them to the current leader")
    }

    /// The newer epoch this node learned of, if it was superseded.
    public var supersededBy: UInt64? { superseded.withLock { $0 } }

    /// Refuses a token issued in a newer epoch than this node's: this node was
    /// superseded, and answering from it could hide the new leader's writes.
    func checkEpoch(ofToken epoch: UInt64) throws {
        guard let refusal = epochRefusal(ofToken: epoch) else { return }
        if leads { supersede(by: epoch) }
        throw refusal
    }

    /// Why a token of `epoch` is refused here, or `nil`: what ``checkEpoch(ofToken:)``
    /// throws, without learning of the newer epoch (an inspection changes nothing).
    func epochRefusal(ofToken epoch: UInt64) -> CumulusError? {
        guard epoch > store.epoch else { return nil }
        return CumulusError(
            .serverRejectedRequest,
            "the token was issued in epoch \(epoch) but this node is in epoch \(store.epoch): it was superseded; ask the current leader or its followers")
    }

    /// Whether `secret` is this node's server secret (constant time): a follower
    /// checks its leader's is the same, or the leader's tokens would not open here.
    public func hasServerSecret(_ secret: [UInt8]) -> Bool {
        ConstantTime.equal(secret, self.secret)
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
        let last = try ViewRebuilder.rebuild(views, from: store, progress: progress)
        // Rewritten without a commit of the log: only a sync lets them be trusted after
        // a crash of the machine (``ViewsDurability``).
        try store.syncViews()
        return last
    }

    /// Rebuilds the views from the log in a scratch directory and compares them with
    /// the live ones; checks the hash chain, and that every asset file a reachable
    /// record version refers to is stored and hashes to its name.
    public func verify(progress: ((String, UInt64) -> Void)? = nil) throws -> ViewVerifier.Report {
        var report = try ViewVerifier.verify(views, store: store, progress: progress)
        report.assetsChecked = try reachableAssets().count
        report.assetProblems = try verifyAssets()
        return report
    }

    /// Finishes queued writes and stops the writer. Also done when the container
    /// goes away; the environment closes when the last reference to it does.
    public func close() {
        stance.withLock { $0.reaper?.cancel() }
        writer.close()
        // After the last write: the views closed cleanly need no remaking after a restart.
        try? viewsSyncer?.close()
    }

    deinit {
        stance.withLock { $0.reaper?.cancel() }
        writer.close()
        try? viewsSyncer?.close()
    }
}
